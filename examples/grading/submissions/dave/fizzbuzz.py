def fizzbuzz(n):
    # Counts up to n to find out whether it is a multiple of 3,
    # but steps by 3 from 1, so for most n it never gets there.
    i = 1
    while i != n:
        i += 3
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)
