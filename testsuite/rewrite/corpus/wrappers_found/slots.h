#ifndef SLOTS_H
#define SLOTS_H

void slots_init(void);
void slot_lock(unsigned hv);
void slot_unlock(unsigned hv);

#endif
