/* A self-test that fails: it says so on the UART and then hangs, as a
 * firmware stuck in its fault handler does (no semihosting exit). */
#include "uart.h"

static unsigned checksum(const unsigned char *p, unsigned n)
{
    unsigned sum = 0;
    while (n--)
        sum = sum * 31u + *p++;
    return sum;
}

int main(void)
{
    static const unsigned char table[] = {1, 2, 3, 4};
    uart_init();
    uart_puts("self-test (" VARIANT "): running\r\n");
    if (checksum(table, sizeof table) != 0xdeadbeefu)
        uart_puts("PANIC: self-test failed: checksum mismatch\r\n");
    for (;;)
        ;
}
