/* USART1 of the STM32F100 at 115200 8N1 (QEMU sends it to serial 0),
 * and semihosting exit so an emulator run ends on its own. */
#include <stdint.h>

#define REG(addr) (*(volatile uint32_t *)(addr))
#define RCC_APB2ENR REG(0x40021018)
#define USART1_SR REG(0x40013800)
#define USART1_DR REG(0x40013804)
#define USART1_BRR REG(0x40013808)
#define USART1_CR1 REG(0x4001380C)

static inline void uart_init(void)
{
    RCC_APB2ENR |= (1u << 14) | (1u << 4); /* USART1, GPIOC clocks */
    USART1_BRR = 24000000u / 115200u;
    USART1_CR1 = (1u << 13) | (1u << 3); /* UE, TE */
}

static inline void uart_puts(const char *s)
{
    for (; *s; s++) {
        while (!(USART1_SR & (1u << 7))) /* TXE */
            ;
        USART1_DR = (uint32_t)*s;
    }
}

/* SYS_EXIT (0x18) with ADP_Stopped_ApplicationExit: QEMU with
 * -semihosting exits; on a board without a debugger, do not call it. */
static inline void semihosting_exit(void)
{
    register uint32_t r0 __asm__("r0") = 0x18;
    register uint32_t r1 __asm__("r1") = 0x20026;
    __asm__ volatile("bkpt 0xab" : : "r"(r0), "r"(r1) : "memory");
}
