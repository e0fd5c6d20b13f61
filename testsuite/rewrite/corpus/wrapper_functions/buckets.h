#ifndef BUCKETS_H
#define BUCKETS_H

void buckets_init(void);
void bucket_lock(unsigned hv);
void bucket_unlock(unsigned hv);

#endif
