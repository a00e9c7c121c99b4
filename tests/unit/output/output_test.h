/* Helpers the output unit tests share. Include after <cmocka.h> and output/profile.h. */
#ifndef HWSPY_TESTS_OUTPUT_TEST_H
#define HWSPY_TESTS_OUTPUT_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

/* WCAG 2 contrast of a label on each frame of a flame graph (svg_write()'s text): every frame's
 * fill against its label's colour, black or white (class "on-dark"), at least 4.5:1. The number
 * of frames checked; *ret_white (may be NULL): how many of them had white labels. */
static inline double test_luminance(unsigned r, unsigned g, unsigned b)
{
	unsigned c[3] = { r, g, b };
	double l[3];

	for (int i = 0; i < 3; i++) {
		double x = c[i] / 255.0;

		l[i] = x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4);
	}
	return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2];
}

static inline size_t assert_labels_legible(const char *svg, size_t *ret_white)
{
	const char *s = strstr(svg, "<g id=\"frames\">");
	size_t n = 0, white = 0;

	assert_non_null(s);
	while ((s = strstr(s, "<rect ")) != NULL) {
		const char *fill = strstr(s, " fill=\"rgb("), *text = strstr(s, "<text");
		unsigned r, g, b;
		double l, ratio;
		bool on_dark;

		assert_non_null(fill);
		assert_non_null(text);
		assert_int_equal(sscanf(fill, " fill=\"rgb(%u,%u,%u)\"", &r, &g, &b), 3);
		on_dark = !strncmp(text, "<text class=\"on-dark\"", 21);
		l = test_luminance(r, g, b);
		ratio = on_dark ? 1.05 / (l + 0.05) : (l + 0.05) / 0.05;
		if (ratio < 4.5)
			fail_msg("%s label on rgb(%u,%u,%u): contrast %.2f:1, under 4.5:1",
				 on_dark ? "a white" : "a black", r, g, b, ratio);
		white += on_dark;
		n++;
		s = text;
	}
	if (ret_white)
		*ret_white = white;
	return n;
}

#endif
