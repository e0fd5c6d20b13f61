/* The middle of the chain: no thread-specific data here. */
void journal_note(long amount); /* journal.c */

static long total;

void account(long amount)
{
    total += amount;
    journal_note(amount);
}

long accounted(void)
{
    return total;
}
