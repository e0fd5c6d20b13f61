/*
 * symtab.c - object symbols of an ELF file, sorted by address (see symtab.h).
 *
 * Reads .symtab (or .dynsym when the file is stripped) through a read-only mapping of the
 * file; keeps (start, size) of every STT_OBJECT symbol with a size.  64-bit ELF only.
 */
#define _GNU_SOURCE
#include "symtab.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct range {
    uint64_t start, size;
};

struct ltp_symtab {
    size_t n;
    struct range r[];
};

static int by_start(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static size_t collect(const unsigned char *img, size_t len, const Elf64_Shdr *sh, struct range *out)
{
    if (sh->sh_offset > len || sh->sh_size > len - sh->sh_offset || sh->sh_entsize == 0)
        return 0;
    size_t count = sh->sh_size / sh->sh_entsize, n = 0;
    for (size_t i = 0; i < count; i++) {
        const Elf64_Sym *s = (const Elf64_Sym *)(img + sh->sh_offset + i * sh->sh_entsize);
        if (ELF64_ST_TYPE(s->st_info) != STT_OBJECT || s->st_size == 0 || s->st_shndx == SHN_UNDEF)
            continue;
        if (out)
            out[n] = (struct range){s->st_value, s->st_size};
        n++;
    }
    return n;
}

struct ltp_symtab *ltp_symtab_load(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    const unsigned char *img = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
        img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (img == MAP_FAILED)
        return NULL;
    size_t len = (size_t)st.st_size;
    struct ltp_symtab *t = NULL;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > len - eh->e_shoff)
        goto out;
    const Elf64_Shdr *shdr = (const Elf64_Shdr *)(img + eh->e_shoff);
    const Elf64_Shdr *tab = NULL;
    for (int want = SHT_SYMTAB; !tab && want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0)
        for (size_t i = 0; i < eh->e_shnum; i++)
            if (shdr[i].sh_type == (Elf64_Word)want) {
                tab = &shdr[i];
                break;
            }
    if (!tab)
        goto out;
    size_t n = collect(img, len, tab, NULL);
    size_t bytes = sizeof *t + n * sizeof(struct range);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        goto out;
    t = mem;
    t->n = collect(img, len, tab, t->r);
    qsort(t->r, t->n, sizeof(struct range), by_start);
out:
    munmap((void *)img, len);
    return t;
}

uint64_t ltp_symtab_find(const struct ltp_symtab *t, uint64_t vaddr)
{
    if (!t)
        return 0;
    size_t lo = 0, hi = t->n; /* find the last range with start <= vaddr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->r[mid].start <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const struct range *r = &t->r[lo - 1];
    return vaddr < r->start + r->size ? r->start : 0;
}
