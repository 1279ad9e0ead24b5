#include "uart.h"

void uart_putc(char c)
{
    while (UART_TXFIFO_CNT(UART0_STATUS) >= UART_FIFO_SIZE - 1)
        ;
    UART0_FIFO = (uint8_t)c;
}

void uart_puts(const char *s)
{
    while (*s)
        uart_putc(*s++);
}
