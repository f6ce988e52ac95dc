# cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol -P embed.cmake
# Writes FILE's bytes into a C file as `const char NAME[]` (NUL-terminated) and
# `const unsigned long NAME_len`, so the daemon serves its page from the binary, with
# no file to install and no step that needs the network.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed.cmake; do not edit. */\n"
  "const char ${NAME}[] = {\n${bytes}0x00};\nconst unsigned long ${NAME}_len = ${len};\n")
