"""Tests for the fizzbuzz assignment: fizzbuzz(n) -> str."""

import unittest

from fizzbuzz import fizzbuzz


def expected(n):
    if n % 15 == 0:
        return "FizzBuzz"
    if n % 3 == 0:
        return "Fizz"
    if n % 5 == 0:
        return "Buzz"
    return str(n)


class FizzBuzzTest(unittest.TestCase):
    def test_numbers(self):
        for n in (1, 2, 4, 7, 98):
            self.assertEqual(fizzbuzz(n), str(n))

    def test_fizz(self):
        for n in (3, 6, 9, 99):
            self.assertEqual(fizzbuzz(n), "Fizz")

    def test_buzz(self):
        for n in (5, 10, 20, 100):
            self.assertEqual(fizzbuzz(n), "Buzz")

    def test_fizzbuzz(self):
        for n in (15, 30, 45, 90):
            self.assertEqual(fizzbuzz(n), "FizzBuzz")

    def test_first_hundred(self):
        for n in range(1, 101):
            self.assertEqual(fizzbuzz(n), expected(n), f"fizzbuzz({n})")


if __name__ == "__main__":
    unittest.main()
