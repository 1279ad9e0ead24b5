/* Print one line on UART0, then count the machine cycles forever. */
#include "uart.h"

static uint32_t cycles(void)
{
    uint32_t c;
    __asm__ volatile("csrr %0, mcycle" : "=r"(c)); /* needs _zicsr */
    return c;
}

int main(void)
{
    uart_puts("hello from esp32c3\r\n");
    for (;;) {
        uint32_t start = cycles();
        while (cycles() - start < 16000000u)
            ;
        uart_putc('.');
    }
}
