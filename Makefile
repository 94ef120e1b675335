# nlpipe — one plain Makefile.
#
#   make                 build libnlpipe.a, every tool in bin/ and the developer tools in tools/
#   make test            install missing Debian packages, build, run unit + CLI + golden tests
#   make asan            the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make demo            the main job on embedded defaults (see README.md)
#   make bench [BENCH=name]   benchmarks, one line name<TAB>value<TAB>unit each
#   make fuzz [SECONDS=N]     every libFuzzer target of tools/fuzz for N seconds (clang-14)
#   make install PREFIX=/usr/local
#   V=1                  show the full compiler commands (quiet by default)
#
# Sources are discovered: lib/<layer>/*.c go into the library, bin/<tool>.c is one
# tool each (bin/common/*.c, the tools' layer, is an archive every tool links), tools/<name>.c is one
# developer tool each, tests/unit/test_<name>.c is one unit-test program each.

VERSION   := 0.1.0
CC        ?= cc
CFLAGS    ?= -O2 -g -march=native
WARN      := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes -Wmissing-prototypes
OPENMP    ?= -fopenmp
CPPFLAGS  += -Ilib -Ibin -D_GNU_SOURCE -DNLP_VERSION='"$(VERSION)"'
# -fno-math-errno: no libm function of ours is checked through errno, and
# with it a loop over sqrtf (AdamW's) is vectorised rather than a call each
ALLCFLAGS  = -std=c11 -fno-math-errno $(WARN) $(OPENMP) $(CFLAGS) $(CPPFLAGS)
# no -lopenblas: OpenBLAS is opened at run time, and only under
# NLPIPE_GEMM=openblas (lib/nn/gemm.c says why)
LDLIBS    += -lutf8proc -lyaml -ljansson -lm -lpthread
PREFIX    ?= /usr/local
SHARED    ?= ../shared

# MPI: data-parallel training (lib/train/dist.c) where Open MPI's development
# files are installed; `make MPI=0` builds without it (one process per run).
MPI       ?= $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0)
ifeq ($(MPI),1)
MPI_CPPFLAGS := -DNLP_MPI $(shell pkg-config --cflags ompi-c)
MPI_LIBS  := $(shell pkg-config --libs ompi-c)
# only the tools that train (pretrain, finetune) reference MPI: the others
# are linked without it
LDFLAGS   += -Wl,--as-needed
endif
# nlpipe.pc: what every program linking libnlpipe.a needs (Libs), and MPI
# apart (Libs.private, also the variable mpi_libs): only a program that
# trains (nlp_train) pulls in lib/train/dist.o, which calls MPI
PC_LIBS   := $(LDLIBS)
LDLIBS    += $(MPI_LIBS)

# BUILD holds objects; BINDIR the tools. `make asan` uses its own pair so the
# sanitized and the normal build never mix.
BUILD     ?= build
BINDIR    ?= bin
TOOLDIR   ?= tools

LIB_SRC   := $(sort $(wildcard lib/*/*.c))
LAYERS    := base text tok nn model train decode eval
LIB_HDR   := $(foreach l,$(LAYERS),$(sort $(wildcard lib/$(l)/*.h)))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libnlpipe.a
CLI_SRC   := $(sort $(wildcard bin/common/*.c))
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/%.o)
CLI_LIB   := $(BUILD)/bin/common/libcli.a
TOOL_SRC  := $(sort $(wildcard bin/*.c))
TOOLS     := $(TOOL_SRC:bin/%.c=$(BINDIR)/%)
DEV_SRC   := $(sort $(wildcard tools/*.c))
# scripts installed beside the tools (make install)
SCRIPTS   := tools/plot-log tools/plot-attention
DEVTOOLS  := $(DEV_SRC:tools/%.c=$(TOOLDIR)/%)
UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNITS     := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
DEPS_OK   := $(BUILD)/.deps-ok

# Quiet by default, as kernel-style Makefiles are: one short line per step.
# `make V=1` shows the full commands.
V ?= 0
ifeq ($(V),1)
Q :=
say = @:
else
Q := @
say = @printf '  %-7s %s\n'
endif

MAKEFLAGS += --no-builtin-rules
.SUFFIXES:
.SECONDARY:

.PHONY: all lib tools units test asan valgrind demo bench fuzz install uninstall clean deps check-deps
.DEFAULT_GOAL := all

all: $(CLI_LIB) $(TOOL_LIB) $(TOOLS) $(DEVTOOLS) $(UNITS)
lib: $(LIB)
tools: $(TOOLS) $(DEVTOOLS)
units: $(UNITS)

# Missing Debian packages are installed once; the stamp keeps later builds quiet.
$(DEPS_OK): tools/install-deps
	@tools/install-deps
	@mkdir -p $(@D) && touch $@
deps: $(DEPS_OK)

$(BUILD)/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(say) CC $<
	$(Q)$(CC) $(ALLCFLAGS) -MMD -MP -c $< -o $@

# dist.o is rebuilt when MPI changes (the stamp holds the last value)
MPI_STAMP := $(BUILD)/.mpi
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(MPI_STAMP) 2>/dev/null)" = "$(MPI)" ] || echo "$(MPI)" > $(MPI_STAMP); })
$(BUILD)/lib/train/dist.o: CPPFLAGS += $(MPI_CPPFLAGS)
$(BUILD)/lib/train/dist.o: $(MPI_STAMP)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(say) AR $@
	$(Q)$(AR) rcs $@ $^

# the tools' common layer is an archive too, so that a tool links only what
# it uses
$(CLI_LIB): $(CLI_OBJ)
	@rm -f $@
	$(say) AR $@
	$(Q)$(AR) rcs $@ $^

# Under `make asan` (PLAIN_CFLAGS set) the tools link the matrix kernels
# (sgemm.c, gemv.c: arithmetic over buffers that instrumented code packed)
# built without the sanitizers: instrumented, they made the CLI suites three
# times slower (0620-translate: 94 s against 32 s), training runs being
# mostly matrix products. The unit tests, test_sgemm's 942 shapes and edge
# cases among them, and the developer tools link the instrumented library.
TOOL_LIB  := $(LIB)
ifneq ($(PLAIN_CFLAGS),)
KERN_SRC   := lib/nn/sgemm.c lib/nn/gemv.c
KERN_PLAIN := $(KERN_SRC:%.c=$(BUILD)/plain/%.o)
TOOL_LIB   := $(BUILD)/libnlpipe-tools.a
$(BUILD)/plain/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(say) CC "$< (no sanitizers)"
	$(Q)$(CC) -std=c11 -fno-math-errno $(WARN) $(OPENMP) $(PLAIN_CFLAGS) $(CPPFLAGS) -MMD -MP -c $< -o $@
$(TOOL_LIB): $(filter-out $(KERN_SRC:%.c=$(BUILD)/%.o),$(LIB_OBJ)) $(KERN_PLAIN)
	@rm -f $@
	$(say) AR $@
	$(Q)$(AR) rcs $@ $^
-include $(KERN_PLAIN:.o=.d)
endif

# (after $(LIB) too, so that a later make of this tree without
# PLAIN_CFLAGS, as tests/cli/0007 runs `make install`, finds them up to date)
$(BINDIR)/%: $(BUILD)/bin/%.o $(CLI_LIB) $(TOOL_LIB) $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(OPENMP) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CLI_LIB) $(TOOL_LIB) $(LDLIBS)

$(TOOLDIR)/%: $(BUILD)/tools/%.o $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(OPENMP) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# the developer tools parse their options with the tools' layer (bin/common/cli.c)
$(DEVTOOLS): $(BUILD)/bin/common/cli.o
$(DEVTOOLS): LIB := $(BUILD)/bin/common/cli.o $(LIB)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	@mkdir -p $(@D)
	$(say) LD $@
	$(Q)$(CC) $(OPENMP) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# The test command of README.md. tests/run prints the final `N passed, N failed, N skipped`.
test: $(DEPS_OK)
	@$(MAKE) --no-print-directory all
	@NLPIPE_BIN=$(abspath $(BINDIR)) NLPIPE_TOOLS=$(abspath $(TOOLDIR)) \
	  NLPIPE_MPI=$(MPI) NLPIPE_UNITS=$(abspath $(BUILD)/tests) SHARED=$(abspath $(SHARED)) tests/run

ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
asan: $(DEPS_OK)
	@$(MAKE) --no-print-directory all BUILD=build/asan BINDIR=build/asan/bin \
	  TOOLDIR=build/asan/tools CFLAGS='$(ASAN_FLAGS) -march=native' PLAIN_CFLAGS='-O2 -g -march=native'
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86 UBSAN_OPTIONS=print_stacktrace=1:exitcode=86 \
	  NLPIPE_ASAN=1 NLPIPE_BIN=$(abspath build/asan/bin) NLPIPE_TOOLS=$(abspath build/asan/tools) \
	  NLPIPE_MPI=$(MPI) NLPIPE_UNITS=$(abspath build/asan/tests) SHARED=$(abspath $(SHARED)) tests/run

# memcheck over short pretrain/generate/translate/finetune runs (tests/cli/0740-valgrind.bats)
valgrind: $(DEPS_OK)
	@$(MAKE) --no-print-directory all
	@NLPIPE_VALGRIND=1 ONLY=0740-valgrind NLPIPE_BIN=$(abspath $(BINDIR)) NLPIPE_TOOLS=$(abspath $(TOOLDIR)) \
	  NLPIPE_MPI=$(MPI) NLPIPE_UNITS=$(abspath $(BUILD)/tests) SHARED=$(abspath $(SHARED)) tests/run

demo: $(DEPS_OK)
	@echo "make demo: building the tools (log: $(BUILD)/demo-build.log)"
	@$(MAKE) --no-print-directory tools >$(BUILD)/demo-build.log 2>&1 || { cat $(BUILD)/demo-build.log; exit 1; }
	@NLPIPE_BIN=$(abspath $(BINDIR)) tools/demo

bench: $(DEPS_OK)
	@$(MAKE) --no-print-directory all
	@NLPIPE_BIN=$(abspath $(BINDIR)) NLPIPE_TOOLS=$(abspath $(TOOLDIR)) \
	  SHARED=$(abspath $(SHARED)) tools/bench/run $(BENCH)

# Each libFuzzer target of tools/fuzz/ (existing and new) for SECONDS
# seconds, one after the other, on the committed seed corpora; the normal
# build is not needed. Findings are written to build/fuzz (tools/fuzz/run).
SECONDS ?= 60
fuzz: $(DEPS_OK)
	@tools/fuzz/run all $(SECONDS)

# The one public header: includes every module header, bottom layer first.
# C and C++ read it: the system headers come first, outside the extern "C"
# block that holds the module headers (their guards keep them from being
# read again inside it). Always regenerated (it is tiny): a deleted header
# must leave it too.
.PHONY: $(BUILD)/nlpipe.h
$(BUILD)/nlpipe.h:
	@mkdir -p $(@D)
	@{ echo '/* nlpipe.h — public interface of libnlpipe $(VERSION) (generated). */'; \
	  echo '#ifndef NLPIPE_H'; echo '#define NLPIPE_H'; \
	  sed -n 's/^\#[[:space:]]*include[[:space:]]*<\([^>]*\)>.*/\#include <\1>/p' $(LIB_HDR) | sort -u; \
	  echo '#ifdef __cplusplus'; echo 'extern "C" {'; echo '#endif'; \
	  for h in $(LIB_HDR); do echo "#include \"$${h#lib/}\""; done; \
	  echo '#ifdef __cplusplus'; echo '}'; echo '#endif'; \
	  echo '#endif'; } > $@

install: all $(BUILD)/nlpipe.h
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include/nlpipe $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7
	$(if $(TOOLS),install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin)
	install -m 755 $(SCRIPTS) $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib
	install -m 644 $(BUILD)/nlpipe.h $(DESTDIR)$(PREFIX)/include/nlpipe/nlpipe.h
	printf '%s\n' 'prefix=$(PREFIX)' 'mpi_libs=$(strip $(MPI_LIBS))' 'Name: nlpipe' \
	  'Description: Transformer NLP toolchain core library' \
	  'Version: $(VERSION)' 'Cflags: -I$${prefix}/include/nlpipe -fopenmp' \
	  'Libs: -L$${prefix}/lib -lnlpipe -fopenmp $(strip $(PC_LIBS))' \
	  'Libs.private: $${mpi_libs}' > $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlpipe.pc
	for h in $(LIB_HDR); do \
	  d=$(DESTDIR)$(PREFIX)/include/nlpipe/$$(basename $$(dirname $$h)); \
	  install -d $$d && install -m 644 $$h $$d; done
	$(if $(wildcard man/man1/*.1),install -m 644 $(wildcard man/man1/*.1) $(DESTDIR)$(PREFIX)/share/man/man1)
	install -m 644 man/man7/nlpipe.7 $(DESTDIR)$(PREFIX)/share/man/man7

uninstall:
	rm -f $(TOOLS:$(BINDIR)/%=$(DESTDIR)$(PREFIX)/bin/%) $(SCRIPTS:tools/%=$(DESTDIR)$(PREFIX)/bin/%) \
	  $(DESTDIR)$(PREFIX)/lib/libnlpipe.a
	rm -rf $(DESTDIR)$(PREFIX)/include/nlpipe $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlpipe.pc
	rm -f $(patsubst man/man1/%,$(DESTDIR)$(PREFIX)/share/man/man1/%,$(wildcard man/man1/*.1)) \
	  $(DESTDIR)$(PREFIX)/share/man/man7/nlpipe.7

clean:
	rm -rf build $(TOOLS) $(DEVTOOLS)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNITS:$(BUILD)/tests/%=$(BUILD)/tests/unit/%.d) \
         $(TOOL_SRC:%.c=$(BUILD)/%.d) $(DEV_SRC:%.c=$(BUILD)/%.d)
