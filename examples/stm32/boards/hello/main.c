/* UART hello: one line, then exit the emulator. */
#include "uart.h"

int main(void)
{
    uart_init();
    uart_puts("hello from stm32 (" VARIANT ")\r\n");
    semihosting_exit();
    return 0;
}
