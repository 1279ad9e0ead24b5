/* UART0 of the ESP32-C3: write bytes to its TX FIFO. */
#ifndef UART_H
#define UART_H

#include <stdint.h>

#define UART0_FIFO (*(volatile uint32_t *)0x60000000)
#define UART0_STATUS (*(volatile uint32_t *)0x6000001C)
#define UART_TXFIFO_CNT(s) (((s) >> 16) & 0x3FF)
#define UART_FIFO_SIZE 128

void uart_putc(char c);
void uart_puts(const char *s);

#endif
