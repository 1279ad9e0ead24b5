/* Blinky: toggle the board's LEDs (PC8, PC9) and report each state on
 * the UART, then exit the emulator. */
#include "uart.h"

#define GPIOC_CRH REG(0x40011004)
#define GPIOC_ODR REG(0x4001100C)

static void delay(volatile uint32_t n)
{
    while (n--)
        ;
}

int main(void)
{
    uart_init();
    GPIOC_CRH = 0x44444422u; /* PC8, PC9: push-pull outputs, 2 MHz */
    int on = 0;
    for (int i = 0; i < 4; i++) {
        on = !on;
        GPIOC_ODR = on ? (1u << 8) | (1u << 9) : 0;
        uart_puts(on ? "led on\r\n" : "led off\r\n");
        delay(100000);
    }
    uart_puts("hello from stm32 (" VARIANT ")\r\n");
    semihosting_exit();
    return 0;
}
