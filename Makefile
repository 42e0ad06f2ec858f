# SPDX-License-Identifier: MIT
# Makefile - builds SimpleFS (libsfs.a), simplefs_server, libur_fs.so, the
# liburing drop-in (uring/liburing.so.2), the tools, bench and the tests. Sources are found by directory, so a new file in a layer's
# directory needs no edit here.
#
#   make                 build everything (warnings are errors, gcc or clang)
#   make test            build and run the test suite
#   make O=build-san SANITIZE=1 test   the same under ASan + UBSan, in build-san/
#   make fuzz            libFuzzer passes over mount + fsck, over the server's SQE
#                        path and over the drop-in's emulated ring (clang, FUZZ_TIME seconds each)
#   make mutate          plant each mutant of tests/mutants/ in a scratch copy: each must be killed
#   make install PREFIX=/usr/local DESTDIR=   (programs, library, SQLite VFS, headers, man pages)
#   make deb             Debian packages in $(O)/deb/ (dpkg-buildpackage; debian/)
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
LIBEXECDIR  ?= $(PREFIX)/libexec/urfs
MANDIR      ?= $(PREFIX)/share/man
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
TESTLIB_SRC := $(wildcard tests/lib/*.c)
SQLITE_SRC := $(wildcard src/sqlite/*.c)

SFS_OBJ    := $(SFS_SRC:%.c=$(OBJ)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(OBJ)/%.o)
LIB_OBJ    := $(LIB_SRC:%.c=$(OBJ)/%.pic.o)
URING_OBJ  := $(URING_SRC:%.c=$(OBJ)/%.pic.o)
BENCH_OBJ  := $(BENCH_SRC:%.c=$(OBJ)/%.o)
TOOLS      := $(TOOL_SRC:tools/%.c=$(O)/%)
TESTS      := $(TEST_SRC:tests/%.c=$(OBJ)/t/%)
# Shared objects the tests LD_PRELOAD into programs (tests/lib/NAME.c -> obj/t/libNAME.so).
TESTLIBS   := $(TESTLIB_SRC:tests/lib/%.c=$(OBJ)/t/lib%.so)
# Programs the scripts run (tests/progs/NAME.c -> obj/progs/NAME); uring_which is
# built by scripts/test-deb.sh against liburing-dev instead.
PROGS_T    := $(OBJ)/progs/trap_cost

LIBSFS     := $(OBJ)/libsfs.a
# The server's parts but main.o: the server links them, and so do the tests that
# call its checks in-process (region header, doorbells).
LIBSERVER  := $(OBJ)/libserver.a
SERVER_LIB_OBJ := $(filter-out $(OBJ)/src/server/main.o,$(SERVER_OBJ))
# The library's file name starts with its soname (libur_fs.so.1 -> libur_fs.so.1.0.0).
SONAME     := libur_fs.so.$(SOVERSION)
LIBFILE    := $(SONAME).0.0
LIBUR      := $(O)/$(LIBFILE)
SERVER     := $(O)/simplefs_server
BENCH      := $(O)/bench
# The drop-in gets a folder of its own: LD_LIBRARY_PATH=$(O)/uring PROGRAM.
URING_DIR  := $(O)/uring
LIBURING   := $(URING_DIR)/liburing.so.2
# The system-call front's preload (urfs-uring --syscalls), beside the drop-in it needs.
SYSFRONT   := $(URING_DIR)/liburfs_syscalls.so
# Installed in a private directory, never over the system's liburing.so.2.
URING_INSTDIR := $(LIBDIR)/urfs
# The SQLite VFS's loadable extension (sqlite3 shell: .load DIR/liburfs_sqlite), a
# plugin: in a directory of its own, not the loader's path.
SQLITE_INSTDIR := $(LIBDIR)/sqlite3

# Programs find libur_fs.so beside themselves (tests: two levels up, from obj/t/).
RPATH_TOP  := -Wl,-rpath,'$$ORIGIN'
RPATH_TEST := -Wl,-rpath,'$$ORIGIN/../..'
LINK_UR    := -L$(O) -l:$(SONAME)
BENCH_LIBS := -luring -laio

# The SQLite VFS (docs/SQLITE.md): a loadable extension for the sqlite3 shell,
# and an archive built with -DSQLITE_CORE for programs (and tests) that link SQLite.
SQLITE_EXT := $(O)/liburfs_sqlite.so
SQLITE_A   := $(OBJ)/liburfs_sqlite.a

# The pkg-config file, from src/lib/libur_fs.pc.in: $(call PC,PREFIX,LIBDIR,INCDIR).
PC = sed -e 's|@PREFIX@|$(1)|;s|@LIBDIR@|$(2)|;s|@INCDIR@|$(3)|;s|@VERSION@|$(VERSION)|' src/lib/libur_fs.pc.in
# The build's own, for programs built against the tree (pkg-config prefers
# NAME-uninstalled.pc: PKG_CONFIG_PATH=$(O) pkg-config --libs libur_fs).
UNINST_PC  := $(O)/libur_fs-uninstalled.pc

.PHONY: all progs runtime test check clean install fuzz run deps deb deb-deps mutate java
.SECONDARY:
all: runtime $(TESTS) java
# What any test needs besides its own program: scripts/mutate.sh builds this and the
# tests a mutant names, not every test (a change to a library relinks all of them).
# (The Java parts are not in it: no mutant names a Java test.)
runtime: progs $(SQLITE_EXT) $(SQLITE_A) $(TESTLIBS) $(PROGS_T) $(UNINST_PC)
progs: $(LIBSFS) $(LIBSERVER) $(LIBUR) $(LIBURING) $(SYSFRONT) $(SERVER) $(TOOLS) $(BENCH)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# The client library finds simplefs_server in the install's libexec directory last.
$(OBJ)/src/lib/%.pic.o: CPPFLAGS += -DUR_LIBEXECDIR='"$(LIBEXECDIR)"'
$(OBJ)/%.pic.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(LIBSFS): $(SFS_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSERVER): $(SERVER_LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBUR): $(LIB_OBJ) src/lib/libur_fs.map
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=src/lib/libur_fs.map \
	  $(LDFLAGS) -o $@ $(LIB_OBJ) -luring $(LDLIBS_BASE)
	ln -sf $(LIBFILE) $(O)/$(SONAME)
	ln -sf $(SONAME) $(O)/libur_fs.so

# liburing.so.2 with Debian 12's symbol versions (LIBURING_2.0 .. 2.3). Its own
# calls between exported functions bind inside it (-Bsymbolic-functions), so it
# stays whole even when loaded beside another liburing (bench's dropin engine).
$(LIBURING): $(URING_OBJ) src/uring/liburing.map
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,liburing.so.2 -Wl,--version-script=src/uring/liburing.map -Wl,-Bsymbolic-functions \
	  $(LDFLAGS) -o $@ $(URING_OBJ) $(LDLIBS_BASE)

SYSFRONT_OBJ := $(patsubst %.c,$(OBJ)/%.pic.o,$(wildcard src/uring/preload/*.c))
$(SYSFRONT): $(SYSFRONT_OBJ) $(LIBURING)
	$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,liburfs_syscalls.so -Wl,-rpath,'$$ORIGIN' \
	  $(LDFLAGS) -o $@ $(SYSFRONT_OBJ) -L$(URING_DIR) -l:liburing.so.2 -ldl $(LDLIBS_BASE)

$(OBJ)/src/sqlite/%.ext.o: src/sqlite/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(OBJ)/src/sqlite/%.core.o: src/sqlite/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DSQLITE_CORE $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(SQLITE_EXT): $(SQLITE_SRC:%.c=$(OBJ)/%.ext.o) $(LIBUR)
	$(CC) $(ALL_CFLAGS) -shared $(LDFLAGS) $(RPATH_TOP) -o $@ $(filter %.o,$^) $(LINK_UR) $(LDLIBS_BASE)

$(SQLITE_A): $(SQLITE_SRC:%.c=$(OBJ)/%.core.o)
	rm -f $@ && ar rcs $@ $^

$(O)/simplefs_server: $(OBJ)/src/server/main.o $(LIBSERVER) $(LIBSFS)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $(OBJ)/src/server/main.o $(LIBSERVER) $(LIBSFS) $(LDLIBS_BASE)

$(O)/%: $(OBJ)/tools/%.o $(LIBSFS) $(LIBUR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TOP) -o $@ $< $(LIBSFS) $(LINK_UR) $(LDLIBS_BASE)

# The drop-in's launcher needs nothing of the project but where make install
# puts the drop-in (it looks beside itself first: ./urfs-uring finds ./uring/);
# its test knows that directory too.
$(OBJ)/tools/urfs-uring.o $(OBJ)/tests/test_urfs_uring.o: CPPFLAGS += -DURFS_URING_DIR='"$(URING_INSTDIR)"'
$(O)/urfs-uring: $(OBJ)/tools/urfs-uring.o
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $<

$(O)/bench: $(BENCH_OBJ) $(LIBSFS) $(LIBUR)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TOP) -o $@ $(BENCH_OBJ) $(LIBSFS) $(LINK_UR) $(BENCH_LIBS) $(LDLIBS_BASE)

# (the build's pkg-config file: see UNINST_PC)
$(UNINST_PC): src/lib/libur_fs.pc.in Makefile
	$(call PC,$(abspath $(O)),$(abspath $(O)),$(CURDIR)/include) > $@

# Tests may use bench's engine objects (all but src/bench/main.c) to test the harness.
# (bench sources live in src/bench/: a bench/ directory would clash with ./bench.)
BENCH_LIB_OBJ := $(filter-out $(OBJ)/src/bench/main.o,$(BENCH_OBJ))
$(OBJ)/t/%: $(OBJ)/tests/%.o $(LIBSERVER) $(LIBSFS) $(LIBUR) $(BENCH_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(TEST_LDFLAGS) $(RPATH_TEST) -o $@ $< $(BENCH_LIB_OBJ) $(LIBSERVER) $(LIBSFS) $(LINK_UR) $(BENCH_LIBS) $(LDLIBS_BASE)

# test_sfs_nomem makes libsfs.a's allocations fail in turn: its own wrappers.
$(OBJ)/t/test_sfs_nomem: TEST_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign

# test_uring_* are liburing programs (Debian's <liburing.h>) linked to the drop-in,
# never to the system's liburing: they find it in $(O)/uring through their rpath.
URING_TESTS := $(filter $(OBJ)/t/test_uring_%,$(TESTS))
$(URING_TESTS): $(OBJ)/t/%: $(OBJ)/tests/%.o $(LIBURING)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/../../uring' -o $@ $< -L$(URING_DIR) -l:liburing.so.2 $(LDLIBS_BASE)

# No sanitizer in a preloaded library: it runs inside any program (ASan's
# runtime must come first in the programs that have it).
$(OBJ)/t/lib%.so: tests/lib/%.c tests/crash_trace.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) -O2 -g -fPIC -shared -o $@ $< -ldl

# trap_cost (scripts/fio-syscalls.sh --bench) runs under the front's preload, which
# is not sanitized: no sanitizer in it either (it finds io_uring_enter by dlsym).
$(OBJ)/progs/trap_cost: tests/progs/trap_cost.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=gnu11 $(WARN) -O2 -g -o $@ $< -ldl

# SQLite tests link the VFS and Debian's libsqlite3.
$(OBJ)/t/test_sqlite_%: $(OBJ)/tests/test_sqlite_%.o $(SQLITE_A) $(LIBSFS) $(LIBUR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $(RPATH_TEST) -o $@ $< $(SQLITE_A) $(LIBSFS) $(LINK_UR) -lsqlite3 $(LDLIBS_BASE)

# The Java binding (java/, docs/JAVA.md), built when javac is present: the JNI
# library over ur_chan.h (the JDK's headers found from javac's real path), the
# org.urfs.channel jar, the H2 FilePath's jar when H2's jar is there, the
# tests' jars (tests/test_java_*.c run them; they skip when they are not
# built) and the page benchmark's (scripts/java-bench.sh).
JAVAC      := $(shell command -v javac 2>/dev/null)
JDK_HOME   := $(if $(JAVAC),$(patsubst %/bin/javac,%,$(realpath $(JAVAC))))
H2_JAR     ?= /usr/share/java/h2.jar
JAVA_OUT   := $(O)/javalib
JNI_LIB    := $(JAVA_OUT)/liburfs_jni.so
URFS_JAR   := $(JAVA_OUT)/urfs.jar
URFS_H2_JAR := $(JAVA_OUT)/urfs-h2.jar
JTEST_JAR  := $(JAVA_OUT)/urfs-tests.jar
JH2TEST_JAR := $(JAVA_OUT)/urfs-h2-tests.jar
JBENCH_JAR := $(JAVA_OUT)/urfs-bench.jar
JAVA_SRC   := $(wildcard java/src/org/urfs/channel/*.java)
JAVA_H2_SRC := $(wildcard java/src/org/urfs/h2/*.java)
JTEST_SRC  := $(wildcard java/test/channel/*.java)
JH2TEST_SRC := $(wildcard java/test/h2/*.java)
JBENCH_SRC := $(wildcard java/bench/*.java)
JAVACFLAGS := -Xlint:all,-path -Werror -encoding UTF-8
ifeq ($(JAVAC),)
java:
	@echo "java: no javac here: the Java binding and its tests are not built (docs/JAVA.md)"
else ifeq ($(wildcard $(H2_JAR)),)
java: $(JNI_LIB) $(URFS_JAR) $(JTEST_JAR)
	@echo "java: no $(H2_JAR): the H2 FilePath and the benchmarks are not built (docs/JAVA.md)"
else
java: $(JNI_LIB) $(URFS_JAR) $(URFS_H2_JAR) $(JTEST_JAR) $(JH2TEST_JAR) $(JBENCH_JAR)
endif

$(OBJ)/java/jni/%.pic.o: CPPFLAGS += -I$(JDK_HOME)/include -I$(JDK_HOME)/include/linux
$(JNI_LIB): $(OBJ)/java/jni/urfs_jni.pic.o $(LIBUR)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared $(LDFLAGS) -Wl,-rpath,'$$ORIGIN/..' -o $@ $< $(LINK_UR) $(LDLIBS_BASE)

# jar SOURCES CLASSPATH: compiles into a fresh directory beside the jar, then packs it.
JAR = rm -rf $@.d && mkdir -p $@.d && $(JAVAC) $(JAVACFLAGS) -d $@.d $(if $(2),-cp $(2)) $(1) && \
	$(JDK_HOME)/bin/jar --create --file $@ -C $@.d . && rm -rf $@.d
$(URFS_JAR): $(JAVA_SRC)
	@mkdir -p $(dir $@)
	$(call JAR,$(JAVA_SRC),)
$(URFS_H2_JAR): $(JAVA_H2_SRC) $(URFS_JAR)
	$(call JAR,$(JAVA_H2_SRC),$(URFS_JAR):$(H2_JAR))
$(JTEST_JAR): $(JTEST_SRC) $(URFS_JAR)
	$(call JAR,$(JTEST_SRC),$(URFS_JAR))
$(JBENCH_JAR): $(JBENCH_SRC) $(URFS_H2_JAR)
	$(call JAR,$(JBENCH_SRC),$(URFS_JAR):$(URFS_H2_JAR):$(H2_JAR))
$(JH2TEST_JAR): $(JH2TEST_SRC) $(URFS_H2_JAR)
	$(call JAR,$(JH2TEST_SRC),$(URFS_JAR):$(URFS_H2_JAR):$(H2_JAR))

# Both README commands install missing Debian packages first (a no-op when present).
deps:
	@sh scripts/install-deps.sh

test check: deps
	$(MAKE) all
	O=$(O) sh tests/run.sh

# Mutation testing works on its own scratch copy of the tree (scripts/mutate.sh).
mutate: deps
	sh scripts/mutate.sh

run: deps
	$(MAKE) all
	O=$(O) sh scripts/demo.sh

fuzz: $(O)/fuzz_sfs $(O)/fuzz_server $(O)/fuzz_uring
	mkdir -p $(O)/fuzz-corpus && cp -n fuzz/corpus/* $(O)/fuzz-corpus/ 2>/dev/null || true
	$(O)/fuzz_sfs -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 $(O)/fuzz-corpus fuzz/corpus
	mkdir -p $(O)/fuzz-corpus-server
	$(O)/fuzz_server -max_total_time=$(FUZZ_TIME) -timeout=10 -rss_limit_mb=2048 \
	  $(O)/fuzz-corpus-server fuzz/corpus_server
	mkdir -p $(O)/fuzz-corpus-uring
	$(O)/fuzz_uring -max_total_time=$(FUZZ_TIME) -timeout=20 -rss_limit_mb=2048 \
	  $(O)/fuzz-corpus-uring fuzz/corpus-uring

$(O)/fuzz_sfs: fuzz/fuzz_sfs.c fuzz/fuzz_steps.h $(SFS_SRC) $(wildcard src/sfs/*.h) include/sfs.h
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ fuzz/fuzz_sfs.c $(SFS_SRC) -pthread

# The server's SQE path in-process (fuzz/fuzz_server_steps.h), without main.c.
FUZZ_SERVER_SRC := $(filter-out src/server/main.c,$(SERVER_SRC))
$(O)/fuzz_server: fuzz/fuzz_server.c fuzz/fuzz_server_steps.h tests/test_ur_inproc.h tests/test_ur_raw.h \
		  $(SFS_SRC) $(FUZZ_SERVER_SRC) $(wildcard src/sfs/*.h src/server/*.h) include/*.h
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ fuzz/fuzz_server.c $(SFS_SRC) $(FUZZ_SERVER_SRC) -pthread -lrt

# The drop-in's emulated ring in-process (fuzz/fuzz_uring_steps.h): its sources
# compiled in, URING_EMULATE=1 set by the steps.
$(O)/fuzz_uring: fuzz/fuzz_uring.c fuzz/fuzz_uring_steps.h $(URING_SRC) $(wildcard src/uring/*.h) src/common/kaio.h
	@mkdir -p $(dir $@)
	clang $(CPPFLAGS) -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  -o $@ fuzz/fuzz_uring.c $(URING_SRC) -pthread -lrt

# Installed names fit a shared /usr/bin: bench becomes urfs-bench, test_ur_write_v2
# (an example) and lockbench (issue 27's lock benchmark) stay in the tree, simplefs_server
# goes to LIBEXECDIR (the library looks there). Man pages: man/man{1,3,7,8}.
INSTALL_TOOLS := $(filter-out $(O)/test_ur_write_v2 $(O)/lockbench,$(TOOLS))
install: progs $(SQLITE_EXT) $(SQLITE_A)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR)
	install -m 755 $(INSTALL_TOOLS) $(DESTDIR)$(BINDIR)/
	install -m 755 $(BENCH) $(DESTDIR)$(BINDIR)/urfs-bench
	install -m 755 $(SERVER) $(DESTDIR)$(LIBEXECDIR)/
	install -m 644 $(LIBSFS) $(DESTDIR)$(LIBDIR)/libsfs.a
	install -m 644 include/*.h src/sqlite/urfs_sqlite.h $(DESTDIR)$(INCDIR)/
	install -d $(DESTDIR)$(SQLITE_INSTDIR)
	install -m 644 $(SQLITE_EXT) $(DESTDIR)$(SQLITE_INSTDIR)/
	install -m 644 $(SQLITE_A) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIBUR) $(DESTDIR)$(LIBDIR)/
	ln -sf $(LIBFILE) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libur_fs.so
	$(call PC,$(PREFIX),$(LIBDIR),$(INCDIR)) > $(DESTDIR)$(LIBDIR)/pkgconfig/libur_fs.pc
	install -d $(DESTDIR)$(URING_INSTDIR)
	install -m 644 $(LIBURING) $(DESTDIR)$(URING_INSTDIR)/liburing.so.2
	install -m 644 $(SYSFRONT) $(DESTDIR)$(URING_INSTDIR)/liburfs_syscalls.so
	for s in 1 3 7 8; do install -d $(DESTDIR)$(MANDIR)/man$$s && \
	  install -m 644 man/man$$s/*.$$s $(DESTDIR)$(MANDIR)/man$$s/ || exit 1; done

# Debian packages (debian/): dpkg-buildpackage on a copy of the tree, lintian.
deb-deps:
	@sh scripts/install-deps.sh deb

deb: deb-deps
	O=$(O) sh scripts/build-deb.sh

clean:
	rm -rf $(OBJ) $(TOOLS) $(UNINST_PC) $(O)/simplefs_server $(O)/bench $(O)/libur_fs.so* $(SQLITE_EXT) $(URING_DIR) $(O)/fuzz_sfs $(O)/fuzz-corpus \
	  $(O)/fuzz_server $(O)/fuzz-corpus-server $(O)/fuzz_uring $(O)/fuzz-corpus-uring $(O)/deb $(JAVA_OUT)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
