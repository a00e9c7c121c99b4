/* Helpers the output unit tests share. Include after <cmocka.h> and output/profile.h. */
#ifndef HWSPY_TESTS_OUTPUT_TEST_H
#define HWSPY_TESTS_OUTPUT_TEST_H

/* The id of the frame (kind, name, file, line, module) in p, interned if new; fails the test
 * when interning fails. */
static inline uint32_t frame(struct profile *p, enum frame_kind kind, const char *name,
			     const char *file, int line, const char *module)
{
	struct profile_frame f = { kind, name, file, line, module };
	uint32_t id;

	assert_int_equal(profile_frame_id(p, &f, &id), 0);
	return id;
}

#endif
