/* Entry point: stack, global pointer, zeroed .bss, then main. */
extern unsigned long _sbss, _ebss;
int main(void);

__attribute__((section(".text.start"), naked, noreturn)) void _start(void)
{
    __asm__ volatile(
        "la sp, _stack_top\n"
        ".option push\n.option norelax\n"
        "la gp, __global_pointer$\n"
        ".option pop\n"
        "j _cstart\n");
}

__attribute__((noreturn, used)) void _cstart(void)
{
    for (unsigned long *p = &_sbss; p < &_ebss;)
        *p++ = 0;
    main();
    for (;;)
        __asm__ volatile("wfi");
}
