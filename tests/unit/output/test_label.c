/* label: module-relative paths by the shape of sys.path entries and by a profile's own files,
 * and frame labels (native modules named once). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/buf.h"
#include "output/label.h"
#include "output/output.h"
#include "output_test.h"

static void expect_rel(const char *file, const char *rel)
{
	const char *got = label_path(NULL, file);

	if (strcmp(got, rel) != 0)
		fail_msg("'%s': got '%s', want '%s'", file, got, rel);
}

static void test_sys_path_shapes(void **state)
{
	(void) state;
	expect_rel("/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", "threading.py");
	expect_rel("/usr/lib/python3.13/json/decoder.py", "json/decoder.py");
	expect_rel("/usr/local/lib64/python3.9/os.py", "os.py");
	expect_rel("/opt/py/lib/python3.13t/threading.py", "threading.py");
	expect_rel("/src/venv1/lib/python3.11/site-packages/numpy/core/numeric.py",
		   "numpy/core/numeric.py");
	expect_rel("/usr/lib/python3/dist-packages/numpy/x.py", "numpy/x.py");
	expect_rel("/opt/conda/envs/a/lib/python3.10/lib-dynload/_json.so", "_json.so");
	/* a venv inside a checkout inside a pyenv tree: the innermost entry */
	expect_rel("/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/a/site-packages/b.py",
		   "b.py");
	/* not entries: names alike, relative paths, frozen modules, an entry alone */
	expect_rel("/home/u/lib/python/app.py", "/home/u/lib/python/app.py");
	expect_rel("/home/u/libpython3.11/app.py", "/home/u/libpython3.11/app.py");
	expect_rel("app.py", "app.py");
	expect_rel("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>");
	expect_rel("/usr/lib/python3.11/", "/usr/lib/python3.11/");
	assert_int_equal(label_sys_path_len(NULL), 0);
}

static void test_common_dir(void **state)
{
	const char *ev[] = { "cpu-clock" };
	struct profile *p = profile_new(ev, 1);
	struct label_paths lp;

	(void) state;
	frame(p, FRAME_PYTHON, "main", "/src/v1/app.py", 1, NULL);
	frame(p, FRAME_PYTHON, "run", "/usr/lib/python3.11/threading.py", 2, NULL);
	frame(p, FRAME_PYTHON, "<module>", "<frozen runpy>", 3, NULL);
	label_paths_init(&lp, p);
	assert_string_equal(label_path(&lp, "/src/v1/app.py"), "app.py");
	frame(p, FRAME_PYTHON, "m", "/src/v1/pkg/m.py", 4, NULL);
	frame(p, FRAME_NATIVE, "memcpy", "/elsewhere/x.c", 5, "libc.so.6");
	label_paths_init(&lp, p);
	assert_string_equal(label_path(&lp, "/src/v1/app.py"), "app.py");
	assert_string_equal(label_path(&lp, "/src/v1/pkg/m.py"), "pkg/m.py");
	assert_string_equal(label_path(&lp, "/usr/lib/python3.11/threading.py"), "threading.py");
	assert_string_equal(label_path(&lp, "/other/v1/app.py"), "/other/v1/app.py");
	/* /src/v10/ shares "/src/v1" but not a directory with /src/v1/ */
	frame(p, FRAME_PYTHON, "z", "/src/v10/z.py", 6, NULL);
	label_paths_init(&lp, p);
	assert_string_equal(label_path(&lp, "/src/v1/app.py"), "v1/app.py");
	/* only "/" in common: full paths */
	frame(p, FRAME_PYTHON, "t", "/tmp/t.py", 7, NULL);
	label_paths_init(&lp, p);
	assert_null(lp.dir);
	assert_string_equal(label_path(&lp, "/src/v1/app.py"), "/src/v1/app.py");
	profile_free(p);
}

/* The same directory from files given one at a time (a dump's frames, in no profile). */
static void test_files_added(void **state)
{
	struct label_paths lp = { 0 };

	(void) state;
	label_paths_add(&lp, "/usr/lib/python3.11/threading.py");      /* an entry's: no say */
	label_paths_add(&lp, "<frozen runpy>");
	label_paths_add(&lp, NULL);
	assert_null(lp.dir);
	label_paths_add(&lp, "/src/v1/pkg/m.py");
	assert_string_equal(label_path(&lp, "/src/v1/pkg/m.py"), "m.py");
	label_paths_add(&lp, "/src/v1/app.py");
	assert_string_equal(label_path(&lp, "/src/v1/pkg/m.py"), "pkg/m.py");
	assert_string_equal(label_path(&lp, "/usr/lib/python3.11/threading.py"), "threading.py");
	/* a path a captured walk cut short (a module's code freed since its sample) has no say */
	label_paths_add(&lp, "/root/.pyenv/versions/3....");
	assert_string_equal(label_path(&lp, "/src/v1/pkg/m.py"), "pkg/m.py");
	/* only "/" in common: full paths, though nothing cleared lp */
	label_paths_add(&lp, "/tmp/t.py");
	assert_string_equal(label_path(&lp, "/src/v1/app.py"), "/src/v1/app.py");
	assert_string_equal(label_path(&lp, "/tmp/t.py"), "/tmp/t.py");
}

static void expect_label(const struct profile_frame *f, const struct label_paths *lp,
			 const char *want, const char *want_full)
{
	struct buf b;

	buf_init(&b);
	assert_int_equal(label_frame(f, lp, &b), 0);
	assert_string_equal(b.data, want);
	buf_reset(&b);
	assert_int_equal(label_frame_full(f, &b), 0);
	assert_string_equal(b.data, want_full);
	buf_release(&b);
}

static void test_labels(void **state)
{
	struct label_paths lp = { "/src/v1/", 8 };

	(void) state;
	expect_label(&(struct profile_frame) { FRAME_PYTHON, "Thread.run",
		     "/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py", 1012, NULL }, &lp,
		     "Thread.run (threading.py:1012)",
		     "Thread.run (/root/.pyenv/versions/3.11.7/lib/python3.11/threading.py:1012)");
	expect_label(&(struct profile_frame) { FRAME_PYTHON, "main", "/src/v1/app.py", 0, NULL },
		     &lp, "main (app.py)", "main (/src/v1/app.py)");
	/* a native module named once; a symbol keeps its module */
	expect_label(&(struct profile_frame) { FRAME_NATIVE,
		     "_multiarray_umath.cpython-311-x86_64-linux-gnu.so+0x1a2b", NULL, 0,
		     "_multiarray_umath.cpython-311-x86_64-linux-gnu.so" }, &lp,
		     "_multiarray_umath.cpython-311-x86_64-linux-gnu.so+0x1a2b",
		     "_multiarray_umath.cpython-311-x86_64-linux-gnu.so+0x1a2b");
	expect_label(&(struct profile_frame) { FRAME_NATIVE, "memcpy", NULL, 0, "libc.so.6" }, &lp,
		     "memcpy [libc.so.6]", "memcpy [libc.so.6]");
	expect_label(&(struct profile_frame) { FRAME_NATIVE, "libc.so.6x", NULL, 0, "libc.so.6" },
		     &lp, "libc.so.6x [libc.so.6]", "libc.so.6x [libc.so.6]");
	expect_label(&(struct profile_frame) { FRAME_KERNEL, "do_syscall_64", NULL, 0, NULL }, &lp,
		     "do_syscall_64_[k]", "do_syscall_64_[k]");
	expect_label(&(struct profile_frame) { FRAME_PYTHON, "f", "/src/v1/a;b.py", 3, NULL }, NULL,
		     "f (/src/v1/a_b.py:3)", "f (/src/v1/a_b.py:3)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sys_path_shapes),
		cmocka_unit_test(test_common_dir),
		cmocka_unit_test(test_files_added),
		cmocka_unit_test(test_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
