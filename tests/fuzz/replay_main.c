/* Replays corpus files through a fuzz target without libFuzzer, so `make check` can run the
 * corpora with a plain compiler. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        fprintf(stderr, "replaying %s\n", argv[i]);   /* names the culprit when one crashes */
        FILE *in = fopen(argv[i], "rb");
        if (!in) {
            perror(argv[i]);
            return 1;
        }
        size_t cap = 4096, len = 0, got;
        uint8_t *buf = malloc(cap);
        while (buf && (got = fread(buf + len, 1, cap - len, in)) > 0) {
            len += got;
            if (len == cap) {
                uint8_t *b = realloc(buf, cap *= 2);
                if (!b)
                    free(buf);
                buf = b;
            }
        }
        fclose(in);
        if (!buf) {
            fprintf(stderr, "%s: out of memory\n", argv[i]);
            return 1;
        }
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
    }
    return 0;
}
