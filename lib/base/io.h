/*
 * io.h — streaming line reader, buffered atomic writer, whole-file reads and
 * read-only mappings.
 *
 * Reader: lines from a file or a pipe, zero-copy, with the line number and
 * byte offset kept for error messages. A line is returned whole, or, past a
 * limit the caller sets, in parts of at most that many bytes, so that the
 * reader's memory is bounded on any stream. Path "-" is standard input.
 *
 * Writer: buffered output. For a named file the bytes go to a temporary file
 * in the same directory, and nlp_writer_close() flushes, fsyncs and renames it
 * over the target (then fsyncs the directory), so a reader never sees a half
 * file and an interrupted run leaves the old file intact; temporaries of a
 * process that is gone (killed by SIGKILL: NAME.tmp.PID-N) are removed by
 * the next write to the same target. Path "-" writes to
 * standard output directly, and so does a path that exists but is not a
 * regular file (a FIFO, /dev/null, /dev/stdout, a shell's /dev/fd/N). A
 * replaced file keeps its permission bits; a new one gets 0666 & ~umask.
 * A symbolic link is followed, as the shell's `>` does: its target is
 * replaced (or created), the link stays. Where no temporary file can be
 * made beside the target (a writable file in a read-only directory) the
 * open fails and says so, unless nlp_writer_set_in_place(1) allows writing
 * such a file in place, without the atomic replace.
 *
 * Not here: decoding of the bytes (lib/text), binary formats (their modules).
 */
#ifndef NLP_BASE_IO_H
#define NLP_BASE_IO_H

#include <stddef.h>
#include <stdint.h>

// --- reader

typedef struct nlp_reader nlp_reader;

enum nlp_newline {
    NLP_NL_LF = 0,        /* lines end at '\n' (the '\r' of "\r\n" stays in the line) */
    NLP_NL_UNIVERSAL = 1, /* "\n", "\r\n" and a lone "\r" all end a line (Python's universal newlines) */
};

/* Opens `path` ("-" = stdin). On failure returns NLP_EIO with
 * "cannot open 'path': reason". The caller frees with nlp_reader_close. */
int nlp_reader_open(nlp_reader **r, const char *path);

/* Wraps an open descriptor; `name` is used in messages (copied). If `own`,
 * close() is called on it by nlp_reader_close. */
int nlp_reader_from_fd(nlp_reader **r, int fd, const char *name, int own);

void nlp_reader_set_newline(nlp_reader *r, enum nlp_newline mode);

/* Lines longer than max bytes (0, the default: no limit) are returned in
 * parts of max bytes, the last part with the rest; nlp_reader_partial()
 * says whether the line goes on after the part just returned. The reader
 * then holds about max + 128 KiB at most, whatever the input. */
void nlp_reader_set_max_line(nlp_reader *r, size_t max);

/* Reads the next line (or the next part of a long one, see above). Returns 1
 * and sets *line and *len (terminator removed, the line NUL-terminated in
 * place; embedded NULs possible, so use *len), 0 at end of input, or
 * NLP_EIO. The pointer stays valid until the next call. A final line
 * without a terminator is still returned. */
int nlp_reader_line(nlp_reader *r, char **line, size_t *len);

/* Reads up to n raw bytes (for binary streams); *got = 0 at end. Mixing with
 * nlp_reader_line is allowed. Returns 0 or NLP_EIO. */
int nlp_reader_read(nlp_reader *r, void *buf, size_t n, size_t *got);

/* Looks at up to n bytes ahead without consuming them: *p points at them
 * (valid until the next read) and *got says how many there are (fewer only
 * at the end of input). Returns 0 or NLP_EIO. */
int nlp_reader_peek(nlp_reader *r, size_t n, const char **p, size_t *got);

/* Reads exactly n bytes: 0, or NLP_EFORMAT "'name': truncated at byte X" when
 * input ends early, or NLP_EIO. */
int nlp_reader_read_exact(nlp_reader *r, void *buf, size_t n);

const char *nlp_reader_name(const nlp_reader *r);
uint64_t nlp_reader_lineno(const nlp_reader *r);      /* 1-based number of the last line returned (the
                                                         line a part belongs to) */
uint64_t nlp_reader_line_offset(const nlp_reader *r); /* byte offset where that line (or part) starts */
int nlp_reader_partial(const nlp_reader *r);          /* 1: the last return was a part and its line goes on */
uint64_t nlp_reader_offset(const nlp_reader *r);      /* bytes consumed so far */
int nlp_reader_had_newline(const nlp_reader *r);      /* did the last line end with a terminator */
void nlp_reader_close(nlp_reader *r);

/* Reads every line of `path` into an array of NUL-terminated strings stored
 * in one block. *lines and the block are freed together with free(*lines).
 * Returns 0 or a negative status. */
int nlp_read_lines(const char *path, enum nlp_newline mode, char ***lines, size_t *n);

// --- writer

typedef struct nlp_writer nlp_writer;

enum {
    NLP_W_DIRECT = 1, /* write a named file in place, not through temp + rename */
};

/* Opens `path` for writing ("-" = stdout). The caller must end with
 * nlp_writer_close (commit) or nlp_writer_abort (discard). */
int nlp_writer_open(nlp_writer **w, const char *path, int flags);

/* Process-wide (the tools' --in-place): when no temporary file can be
 * created beside an existing regular file that is itself writable, write
 * that file in place (truncated, then written; an abort leaves it
 * truncated) instead of failing. Default 0. */
void nlp_writer_set_in_place(int allow);

int nlp_writer_write(nlp_writer *w, const void *p, size_t n);
int nlp_writer_puts(nlp_writer *w, const char *s);
int nlp_writer_putc(nlp_writer *w, int c);
int nlp_writer_printf(nlp_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int nlp_writer_flush(nlp_writer *w);
const char *nlp_writer_name(const nlp_writer *w);
uint64_t nlp_writer_offset(const nlp_writer *w); /* bytes written so far */

/* Flushes, fsyncs, renames the temporary file into place and frees w.
 * Returns 0 or NLP_EIO (then the target is untouched and the temp removed;
 * except when only the directory's fsync after the rename fails: the new
 * file is then in place, but not known to be on disk). */
int nlp_writer_close(nlp_writer *w);

/* Closes n writers as one set (the files of a two-file tokenizer): every
 * file is flushed, fsynced and closed first, and only when all are
 * complete are the temporaries renamed over their targets, so a failure
 * (a full disk) leaves every target as it was. Frees every writer. Returns
 * 0 or the first error. A rename failing after an earlier one of the set
 * succeeded (not expected within one directory) leaves that earlier file
 * replaced. */
int nlp_writer_close_set(nlp_writer **w, size_t n);

/* Discards everything written to a named file (the target is untouched) and
 * frees w. For stdout it only flushes. */
void nlp_writer_abort(nlp_writer *w);

/* Removes the temporary files of every atomic writer still open. Only
 * async-signal-safe calls: meant for a SIGINT/SIGTERM handler that then
 * re-raises the signal, so an interrupted run leaves no *.tmp.* files
 * behind (the targets are untouched either way). */
void nlp_writer_unlink_pending(void);

/* Writes `n` bytes to `path` atomically. */
int nlp_write_file(const char *path, const void *data, size_t n);

// --- whole files

/* Reads all of `path` ("-" = stdin) into a NUL-terminated malloc'd block the
 * caller frees. Returns 0 or NLP_EIO. */
int nlp_read_file(const char *path, char **data, size_t *len);

/* The same, but a file of more than max bytes is refused with NLP_EFORMAT
 * ("'path': larger than N bytes ...") after reading at most max + 64 KiB:
 * for files of bounded size that may come from an endless stream. */
int nlp_read_file_max(const char *path, size_t max, char **data, size_t *len);

/* The same for text read whole (a corpus): a line longer than max_line
 * bytes (0: no limit) is NLP_EDATA "'path' line N: longer than M bytes,
 * the longest line allowed (--max-line-bytes raises the limit)", found
 * before more of it is read, so that an endless line (/dev/zero) takes at
 * most the limit, not the memory. */
int nlp_read_file_lines(const char *path, size_t max_line, char **data, size_t *len);
/* The same for the rest of an open reader (messages name it as it was opened). */
int nlp_reader_read_lines(nlp_reader *r, size_t max_line, char **data, size_t *len);
/* The lengths of the lines in p[0..n), read after a line of *cur bytes so
 * far (line *line, counted from 1): both carried on; NLP_EDATA as above,
 * naming path, as soon as a line passes max_line bytes. */
int nlp_lines_check(const char *path, const char *p, size_t n, size_t max_line, size_t *cur, uint64_t *line);

/* Read-only mapping of a whole regular file (falls back to reading it when
 * mmap is not possible, e.g. a pipe), its pages mapped at once (for a file
 * the caller reads whole). Free with nlp_unmap. */
typedef struct nlp_map {
    const void *data;
    size_t len;
    int mapped; /* 1 = mmap, 0 = malloc */
} nlp_map;

int nlp_map_file(nlp_map *m, const char *path);
/* The same with a size limit, as nlp_read_file_max. */
int nlp_map_file_max(nlp_map *m, const char *path, size_t max);
void nlp_unmap(nlp_map *m);

/* fsync of a directory (the names renamed or created in it made durable):
 * 0, or NLP_EIO "cannot sync directory 'dir': reason" (a file system that
 * cannot sync directories, EINVAL, is no error). */
int nlp_fsync_dir(const char *dir);

/* 1 if `path` is a directory, 0 otherwise. */
int nlp_is_dir(const char *path);
/* 1 if `path` exists and is readable. */
int nlp_file_exists(const char *path);

#endif
