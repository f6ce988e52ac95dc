/* fuzz.h: the libFuzzer entry point every driver defines. */
#ifndef IK_FUZZ_H
#define IK_FUZZ_H
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif
