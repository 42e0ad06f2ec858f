# Makefile - builds SimpleFS (libsfs.a), simplefs_server, libur_fs.so, the
# liburing drop-in (uring/liburing.so.2), the tools, bench and the tests. Sources are found by directory, so a new file in a layer's
# directory needs no edit here.
#
#   make                 build everything (warnings are errors, gcc or clang)
#   make test            build and run the test suite
#   make O=build-san SANITIZE=1 test   the same under ASan + UBSan, in build-san/
#   make fuzz            libFuzzer pass over mount + fsck (clang, FUZZ_TIME seconds)
#   make install PREFIX=/usr/local DESTDIR=
#   make clean

VERSION     := 0.1.0
SOVERSION   := 1
O           ?= .
OBJ         := $(O)/obj
CFLAGS      ?= -O2 -g
WARN        := -Wall -Wextra -Werror
CPPFLAGS    += -Iinclude -D_GNU_SOURCE
ALL_CFLAGS   = -std=gnu11 $(WARN) $(CFLAGS) -pthread
LDLIBS_BASE := -pthread -lrt
PREFIX      ?= /usr/local
LIBDIR      ?= $(PREFIX)/lib
BINDIR      ?= $(PREFIX)/bin
INCDIR      ?= $(PREFIX)/include
FUZZ_TIME   ?= 60

ifeq ($(SANITIZE),1)
ALL_CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS     += -fsanitize=address,undefined
endif

SFS_SRC    := $(wildcard src/sfs/*.c)
SERVER_SRC := $(wildcard src/server/*.c)
LIB_SRC    := $(wildcard src/lib/*.c)
URING_SRC  := $(wildcard src/uring/*.c)
BENCH_SRC  := $(wildcard src/bench/*.c)
TOOL_SRC   := $(wildcard tools/*.c)
TEST_SRC   := $(wildcard tests/*.c)

SFS_OBJ    := $(SFS_SRC:%.c=$(OBJ)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(OBJ)/%.o)
LIB_OBJ    := $(LIB_SRC:%.c=$(OBJ)/%.pic.o)
URING_OBJ  := $(URING_SRC:%.c=$(OBJ)/%.pic.o)
BENCH_OBJ  := $(BENCH_SRC:%.c=$(OBJ)/%.o)
TOOLS      := $(TOOL_SRC:tools/%.c=$(O)/%)
TESTS      := $(TEST_SRC:tests/%.c=$(OBJ)/t/%)

LIBSFS     := $(OBJ)/libsfs.a
SONAME     := libur_fs.so.$(SOVERSION)
LIBUR      := $(O)/libur_fs.so.$(VERSION)
SERVER     := $(O)/simplefs_server
BENCH      := $(O)/bench
# The drop-in gets a folder of its own: LD_LIBRARY_PATH=$(O)/uring PROGRAM.
URING_DIR  := $(O)/uring
LIBURING   := $(URING_DIR)/liburing.so.2

# Programs find libur_fs.so beside themselves (tests: two levels up, from obj/t/).
RPATH_TOP  := -Wl,-rpath,'$$ORIGIN'
RPATH_TEST := -Wl,-rpath,'$$ORIGIN/../..'
LINK_UR    := -L$(O) -l:$(SONAME)
BENCH_LIBS := -luring -laio

.PHONY: all test check clean install fuzz run deps
.SECONDARY:
all: $(LIBSFS) $(LIBUR) $(LIBURING) $(SERVER) $(TOOLS) $(BENCH) $(TESTS)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The client library finds simplefs_server under the install prefix last.
$(OBJ)/src/lib/%.pic.o: CPPFLAGS += -DUR_PREFIX='"$(PREFIX)"'
$(OBJ)/%.pic.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(LIBSFS): $(SFS_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBUR): $(LIB_OBJ) src/lib/libur_fs.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/lib/libur_fs.map \
	  $(LDFLAGS) -o $@ $(LIB_OBJ) -luring $(LDLIBS_BASE)
	ln -sf libur_fs.so.$(VERSION) $(O)/$(SONAME)
	ln -sf $(SONAME) $(O)/libur_fs.so

# liburing.so.2 with Debian 12's symbol versions (LIBURING_2.0 .. 2.3). Its own
# calls between exported functions bind inside it (-Bsymbolic-functions), so it
# stays whole even when loaded beside another liburing (bench's dropin engine).
$(LIBURING): $(URING_OBJ) src/uring/liburing.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,liburing.so.2 -Wl,--version-script=src/uring/liburing.map -Wl,-Bsymbolic-functions \
	  $(LDFLAGS) -o $@ $(URING_OBJ) $(LDLIBS_BASE)

$(O)/simplefs_server: $(SERVER_OBJ) $(LIBSFS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(SERVER_OBJ) $(LIBSFS) $(LDLIBS_BASE)

$(O)/%: $(OBJ)/tools/%.o $(LIBSFS) $(LIBUR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TOP) -o $@ $< $(LIBSFS) $(LINK_UR) $(LDLIBS_BASE)

$(O)/bench: $(BENCH_OBJ) $(LIBSFS) $(LIBUR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TOP) -o $@ $(BENCH_OBJ) $(LIBSFS) $(LINK_UR) $(BENCH_LIBS) $(LDLIBS_BASE)

# Tests may use bench's engine objects (all but src/bench/main.c) to test the harness.
# (bench sources live in src/bench/: a bench/ directory would clash with ./bench.)
BENCH_LIB_OBJ := $(filter-out $(OBJ)/src/bench/main.o,$(BENCH_OBJ))
$(OBJ)/t/%: $(OBJ)/tests/%.o $(LIBSFS) $(LIBUR) $(BENCH_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TEST) -o $@ $< $(BENCH_LIB_OBJ) $(LIBSFS) $(LINK_UR) $(BENCH_LIBS) $(LDLIBS_BASE)

# test_uring_* are liburing programs (Debian's <liburing.h>) linked to the drop-in,
# never to the system's liburing: they find it in $(O)/uring through their rpath.
URING_TESTS := $(filter $(OBJ)/t/test_uring_%,$(TESTS))
$(URING_TESTS): $(OBJ)/t/%: $(OBJ)/tests/%.o $(LIBURING)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../uring' -o $@ $< -L$(URING_DIR) -l:liburing.so.2 $(LDLIBS_BASE)

# Both README commands install missing Debian packages first (a no-op when present).
deps:
	@sh scripts/install-deps.sh

test check: deps
	$(MAKE) all
	O=$(O) sh tests/run.sh

run: deps
	$(MAKE) all
	O=$(O) sh scripts/demo.sh

fuzz: $(O)/fuzz_sfs
	mkdir -p $(O)/fuzz-corpus && cp -n fuzz/corpus/* $(O)/fuzz-corpus/ 2>/dev/null || true
	$(O)/fuzz_sfs -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 $(O)/fuzz-corpus fuzz/corpus

$(O)/fuzz_sfs: fuzz/fuzz_sfs.c fuzz/fuzz_steps.h $(SFS_SRC) $(wildcard src/sfs/*.h) include/sfs.h
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ fuzz/fuzz_sfs.c $(SFS_SRC) -pthread

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)
	install -m 755 $(TOOLS) $(SERVER) $(BENCH) $(DESTDIR)$(BINDIR)/
	install -m 644 $(LIBSFS) $(DESTDIR)$(LIBDIR)/libsfs.a
	install -m 644 include/*.h $(DESTDIR)$(INCDIR)/
	install -m 755 $(LIBUR) $(DESTDIR)$(LIBDIR)/
	ln -sf libur_fs.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libur_fs.so
	sed -e 's|@PREFIX@|$(PREFIX)|;s|@LIBDIR@|$(LIBDIR)|;s|@INCDIR@|$(INCDIR)|;s|@VERSION@|$(VERSION)|' \
	  src/lib/libur_fs.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/libur_fs.pc
	install -d $(DESTDIR)$(LIBDIR)/urfs
	install -m 755 $(LIBURING) $(DESTDIR)$(LIBDIR)/urfs/liburing.so.2

clean:
	rm -rf $(OBJ) $(URING_DIR) $(TOOLS) $(O)/simplefs_server $(O)/bench $(O)/libur_fs.so* $(O)/fuzz_sfs $(O)/fuzz-corpus

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
