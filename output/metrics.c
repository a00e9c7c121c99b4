/* metrics: Prometheus text 0.0.4 and OpenMetrics 1.0.0 exposition (see metrics.h). */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/array.h"
#include "base/buf.h"
#include "base/hash.h"
#include "output/metrics.h"
#include "output/utf8.h"

struct family {
	char *name;
	char *unit;             /* "" for none */
	char *help;             /* "" for none */
	enum metric_type type;
	size_t head, tail;      /* its samples in order, linked by sample.next; SIZE_MAX: none */
};

struct sample {
	size_t family;
	size_t labels;          /* offset in metrics.strings of key\0value\0 ... */
	size_t npairs;
	size_t next;            /* the family's next sample, or SIZE_MAX */
	uint64_t hash;          /* of the family and the label set (order ignored) */
	double value;
};

struct metrics {
	struct family *families;
	size_t nfamilies, families_cap;
	struct sample *samples;
	size_t nsamples, samples_cap;
	struct buf strings;     /* samples' labels */
	size_t *table;          /* open addressing: sample index + 1, 0 empty */
	size_t table_cap;       /* a power of two, or 0 */
	struct buf common;      /* the common labels, key\0value\0 ... */
	size_t ncommon;
	size_t max_series;
	locale_t c_locale;      /* for numbers written with '.' */
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	buf_init(&m->strings);
	buf_init(&m->common);
	m->max_series = METRICS_DEFAULT_MAX_SERIES;
	m->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t) 0);
	if (m->c_locale == (locale_t) 0) {
		metrics_free(m);
		errno = ENOMEM;
		return NULL;
	}
	return m;
}

void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nfamilies; i++) {
		free(m->families[i].name);
		free(m->families[i].unit);
		free(m->families[i].help);
	}
	free(m->families);
	free(m->samples);
	free(m->table);
	buf_release(&m->strings);
	buf_release(&m->common);
	if (m->c_locale != (locale_t) 0)
		freelocale(m->c_locale);
	free(m);
}

void metrics_clear(struct metrics *m)
{
	for (size_t i = 0; i < m->nfamilies; i++)
		m->families[i].head = m->families[i].tail = SIZE_MAX;
	m->nsamples = 0;
	buf_reset(&m->strings);
	if (m->table_cap)
		memset(m->table, 0, m->table_cap * sizeof(*m->table));
}

void metrics_set_limit(struct metrics *m, size_t max_series)
{
	m->max_series = max_series;
}

size_t metrics_count(const struct metrics *m)
{
	return m->nsamples;
}

/* ---- names and labels ------------------------------------------------------------------- */

static bool valid_name(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The number of pairs in labels, or -EINVAL (a bad or repeated key, an odd count, too many
 * pairs counting the ncommon common ones, or a key among them). */
static int check_labels(const char *const *labels, const struct buf *common, size_t ncommon)
{
	size_t n = 0;

	for (; labels != NULL && labels[2 * n] != NULL; n++) {
		const char *key = labels[2 * n];

		if (labels[2 * n + 1] == NULL || !valid_name(key) || !strncmp(key, "__", 2) ||
		    n + ncommon >= METRICS_MAX_LABELS)
			return -EINVAL;
		for (size_t j = 0; j < n; j++)
			if (!strcmp(labels[2 * j], key))
				return -EINVAL;
		for (size_t j = 0, off = 0; j < ncommon; j++) {
			const char *ck = common->data + off;

			if (!strcmp(ck, key))
				return -EINVAL;
			off += strlen(ck) + 1;
			off += strlen(common->data + off) + 1;
		}
	}
	return (int) n;
}

/* ---- families --------------------------------------------------------------------------- */

/* Whether a + sa and b + sb are the same string. */
static bool concat_equal(const char *a, const char *sa, const char *b, const char *sb)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + strlen(sa) != lb + strlen(sb))
		return false;
	if (la > lb)
		return concat_equal(b, sb, a, sa);
	/* a is a prefix of b, and sa is the rest of b then sb */
	return !strncmp(a, b, la) && !strncmp(sa, b + la, lb - la) && !strcmp(sa + lb - la, sb);
}

/* Whether the sample names of a family (name, type) could be taken for those of f's: the
 * names each reserves (itself; a counter also NAME_total and NAME_created) meet. */
static bool clashes(const struct family *f, const char *name, enum metric_type type)
{
	static const char *const counter[] = { "", "_total", "_created" };
	size_t na = f->type == METRIC_COUNTER ? 3 : 1, nb = type == METRIC_COUNTER ? 3 : 1;

	for (size_t i = 0; i < na; i++)
		for (size_t j = 0; j < nb; j++)
			if (concat_equal(f->name, counter[i], name, counter[j]))
				return true;
	return false;
}

int metrics_family(struct metrics *m, const char *name, enum metric_type type, const char *unit,
		   const char *help, size_t *ret_family)
{
	struct family *f;

	unit = unit ? unit : "";
	help = help ? help : "";
	if (name == NULL || !valid_name(name) || (type != METRIC_COUNTER && type != METRIC_GAUGE) ||
	    (type == METRIC_COUNTER && ends_with(name, "_total")))
		return -EINVAL;
	if (*unit) {
		size_t n = strlen(name), k = strlen(unit);

		if (n <= k + 1 || name[n - k - 1] != '_' || strcmp(name + n - k, unit))
			return -EINVAL;
	}
	for (size_t i = 0; i < m->nfamilies; i++) {
		f = &m->families[i];
		if (!strcmp(f->name, name)) {
			if (f->type != type || strcmp(f->unit, unit) || strcmp(f->help, help))
				return -EINVAL;
			*ret_family = i;
			return 0;
		}
		if (clashes(f, name, type))
			return -EINVAL;
	}
	if (array_grow((void **) &m->families, &m->families_cap, m->nfamilies + 1,
		       sizeof(*m->families), 16) < 0)
		return -ENOMEM;
	f = &m->families[m->nfamilies];
	f->name = strdup(name);
	f->unit = strdup(unit);
	f->help = strdup(help);
	if (f->name == NULL || f->unit == NULL || f->help == NULL) {
		free(f->name);
		free(f->unit);
		free(f->help);
		return -ENOMEM;
	}
	f->type = type;
	f->head = f->tail = SIZE_MAX;
	*ret_family = m->nfamilies++;
	return 0;
}

/* ---- samples ---------------------------------------------------------------------------- */

/* The hash of family and the npairs pairs of labels, the same in any order of the pairs. */
static uint64_t label_set_hash(size_t family, const char *const *labels, size_t npairs)
{
	uint64_t h = 0;

	for (size_t i = 0; i < npairs; i++) {
		const char *k = labels[2 * i], *v = labels[2 * i + 1];

		h += hash_mem(v, strlen(v), hash_mem(k, strlen(k) + 1, 0x6d657472));
	}
	return hash_u64(h ^ hash_u64(family + 1));
}

/* Whether sample s has exactly the npairs pairs of labels (in any order). */
static bool same_labels(const struct metrics *m, const struct sample *s, const char *const *labels,
			size_t npairs)
{
	if (s->npairs != npairs)
		return false;
	for (size_t i = 0; i < npairs; i++) {
		const char *p = m->strings.data + s->labels;
		bool found = false;

		for (size_t j = 0; j < npairs && !found; j++) {
			const char *v = p + strlen(p) + 1;

			found = !strcmp(p, labels[2 * i]) && !strcmp(v, labels[2 * i + 1]);
			p = v + strlen(v) + 1;
		}
		if (!found)
			return false;
	}
	return true;
}

/* The slot of the table where a sample of this hash, family and labels is, or the empty slot
 * where it goes. The table has room (table_cap > nsamples). */
static size_t table_slot(const struct metrics *m, uint64_t hash, size_t family,
			 const char *const *labels, size_t npairs)
{
	size_t mask = m->table_cap - 1, i = hash & mask;

	for (;; i = (i + 1) & mask) {
		const struct sample *s;

		if (m->table[i] == 0)
			return i;
		s = &m->samples[m->table[i] - 1];
		if (s->hash == hash && s->family == family && same_labels(m, s, labels, npairs))
			return i;
	}
}

/* Room in the table for one more sample (at most half full). */
static int table_reserve(struct metrics *m)
{
	size_t cap = m->table_cap ? m->table_cap : 64, *t;

	while (cap < 2 * (m->nsamples + 1))
		cap *= 2;
	if (cap == m->table_cap)
		return 0;
	t = calloc(cap, sizeof(*t));
	if (t == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->nsamples; i++) {
		size_t j = m->samples[i].hash & (cap - 1);

		while (t[j] != 0)
			j = (j + 1) & (cap - 1);
		t[j] = i + 1;
	}
	free(m->table);
	m->table = t;
	m->table_cap = cap;
	return 0;
}

int metrics_add(struct metrics *m, size_t family, const char *const *labels, double value)
{
	size_t before = m->strings.len, slot, npairs;
	struct sample *s;
	struct family *f;
	uint64_t hash;
	int n;

	if (family >= m->nfamilies)
		return -EINVAL;
	f = &m->families[family];
	if (f->type == METRIC_COUNTER && (isnan(value) || value < 0))
		return -EINVAL;
	n = check_labels(labels, &m->common, m->ncommon);
	if (n < 0)
		return n;
	npairs = (size_t) n;
	hash = label_set_hash(family, labels, npairs);
	if (m->nsamples >= m->max_series) {
		/* a duplicate is still told as one */
		if (m->table_cap && m->table[table_slot(m, hash, family, labels, npairs)])
			return -EEXIST;
		return -ENOSPC;
	}
	if (table_reserve(m) < 0 ||
	    array_grow((void **) &m->samples, &m->samples_cap, m->nsamples + 1, sizeof(*m->samples),
		       64) < 0)
		return -ENOMEM;
	slot = table_slot(m, hash, family, labels, npairs);
	if (m->table[slot])
		return -EEXIST;
	for (size_t i = 0; i < 2 * npairs; i++)
		if (buf_append(&m->strings, labels[i], strlen(labels[i]) + 1) < 0) {
			m->strings.len = before;
			return -ENOMEM;
		}
	s = &m->samples[m->nsamples];
	*s = (struct sample) { .family = family, .labels = before, .npairs = npairs,
			       .next = SIZE_MAX, .hash = hash, .value = value };
	if (f->tail == SIZE_MAX)
		f->head = m->nsamples;
	else
		m->samples[f->tail].next = m->nsamples;
	f->tail = m->nsamples;
	m->table[slot] = ++m->nsamples;
	return 0;
}

int metrics_set_common(struct metrics *m, const char *const *labels)
{
	struct buf common;
	int n = check_labels(labels, NULL, 0);

	if (n < 0)
		return n;
	for (size_t i = 0; i < m->nsamples; i++) {
		const char *p = m->strings.data + m->samples[i].labels;

		if (m->samples[i].npairs + (size_t) n > METRICS_MAX_LABELS)
			return -EINVAL;
		for (size_t j = 0; j < m->samples[i].npairs; j++) {
			for (int k = 0; k < n; k++)
				if (!strcmp(p, labels[2 * k]))
					return -EINVAL;
			p += strlen(p) + 1;
			p += strlen(p) + 1;
		}
	}
	buf_init(&common);
	for (int i = 0; i < 2 * n; i++)
		if (buf_append(&common, labels[i], strlen(labels[i]) + 1) < 0) {
			buf_release(&common);
			return -ENOMEM;
		}
	buf_release(&m->common);
	m->common = common;
	m->ncommon = (size_t) n;
	return 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* s with \ and newline escaped, " too if quote, each invalid UTF-8 sequence as U+FFFD. */
static void put_escaped(FILE *out, const char *s, bool quote)
{
	const unsigned char *p = (const unsigned char *) s;
	size_t n = strlen(s);

	while (n > 0) {
		size_t len, skip;

		if (*p == '\\' || *p == '\n' || (*p == '"' && quote)) {
			fputc('\\', out);
			fputc(*p == '\n' ? 'n' : *p, out);
			p++, n--;
			continue;
		}
		len = utf8_len(p, n, &skip);
		if (len == 0) {
			fputs("\xef\xbf\xbd", out);
			len = skip;
		} else {
			fwrite(p, 1, len, out);
		}
		p += len, n -= len;
	}
}

/* v as metrics.h says, in the C locale (the caller's uselocale()). */
static void put_value(FILE *out, double v)
{
	char text[40];

	if (isnan(v)) {
		fputs("NaN", out);
	} else if (isinf(v)) {
		fputs(v > 0 ? "+Inf" : "-Inf", out);
	} else if (v == trunc(v) && fabs(v) < 0x1p63) {
		fprintf(out, "%lld", (long long) v);
	} else {
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(text, sizeof(text), "%.*g", prec, v);
			if (strtod(text, NULL) == v)
				break;
		}
		fputs(text, out);
	}
}

static void put_labels(FILE *out, const char *p, size_t npairs, bool *first)
{
	for (size_t i = 0; i < npairs; i++) {
		const char *v = p + strlen(p) + 1;

		fputs(*first ? "{" : ",", out);
		*first = false;
		fputs(p, out);
		fputs("=\"", out);
		put_escaped(out, v, true);
		fputc('"', out);
		p = v + strlen(v) + 1;
	}
}

static void put_family(const struct metrics *m, const struct family *f, bool openmetrics,
		       FILE *out)
{
	const char *suffix = f->type == METRIC_COUNTER ? "_total" : "";
	const char *meta = openmetrics ? "" : suffix;   /* 0.0.4 names the samples */

	if (*f->help) {
		fprintf(out, "# HELP %s%s ", f->name, meta);
		put_escaped(out, f->help, openmetrics);
		fputc('\n', out);
	}
	fprintf(out, "# TYPE %s%s %s\n", f->name, meta,
		f->type == METRIC_COUNTER ? "counter" : "gauge");
	if (openmetrics && *f->unit)
		fprintf(out, "# UNIT %s %s\n", f->name, f->unit);
	for (size_t i = f->head; i != SIZE_MAX; i = m->samples[i].next) {
		const struct sample *s = &m->samples[i];
		bool first = true;

		fputs(f->name, out);
		fputs(suffix, out);
		put_labels(out, m->common.data, m->ncommon, &first);
		put_labels(out, m->strings.data + s->labels, s->npairs, &first);
		fputs(first ? " " : "} ", out);
		put_value(out, s->value);
		fputc('\n', out);
	}
}

int metrics_write(const struct metrics *m, bool openmetrics, FILE *out)
{
	locale_t old = uselocale(m->c_locale);

	for (size_t i = 0; i < m->nfamilies; i++)
		put_family(m, &m->families[i], openmetrics, out);
	if (openmetrics)
		fputs("# EOF\n", out);
	(void) uselocale(old);
	if (fflush(out) != 0)
		return errno ? -errno : -EIO;
	return ferror(out) ? -EIO : 0;
}

const char *metrics_content_type(bool openmetrics)
{
	return openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			   : "text/plain; version=0.0.4; charset=utf-8";
}

/* ---- content negotiation ---------------------------------------------------------------- */

/* Whether [s, s + n) is word, case ignored. */
static bool word_is(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && !strncasecmp(s, word, n);
}

/* [*s, *s + *n) trimmed of spaces and tabs. */
static void trim(const char **s, size_t *n)
{
	while (*n > 0 && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* A q value ("1", "0.5", "0.125": RFC 9110's qvalue) in thousandths; anything else 0. */
static int qvalue(const char *s, size_t n)
{
	int q = 0, scale = 1000;

	if (n == 0 || (s[0] != '0' && s[0] != '1'))
		return 0;
	q = (s[0] - '0') * 1000;
	if (n > 1 && s[1] == '.')
		for (size_t i = 2; i < n && i < 5 && s[i] >= '0' && s[i] <= '9'; i++)
			q += (s[i] - '0') * (scale /= 10);
	return q > 1000 ? 1000 : q;
}

/* One media range [s, s + n) of an Accept header: *ret_q (0 to 1000) and which format it asks
 * for: 1 OpenMetrics, 0 text 0.0.4, -1 neither. */
static int media_range(const char *s, size_t n, int *ret_q)
{
	const char *end = s + n, *semi = memchr(s, ';', n), *version = NULL;
	size_t tn = semi ? (size_t) (semi - s) : n, vn = 0;
	int kind = -1;

	*ret_q = 1000;
	trim(&s, &tn);
	if (word_is(s, tn, "application/openmetrics-text"))
		kind = 1;
	else if (word_is(s, tn, "text/plain") || word_is(s, tn, "text/*") || word_is(s, tn, "*/*"))
		kind = 0;
	while (semi != NULL) {
		const char *k = semi + 1, *v, *eq;
		size_t kn, vl;

		semi = memchr(k, ';', (size_t) (end - k));
		eq = memchr(k, '=', (size_t) ((semi ? semi : end) - k));
		if (eq == NULL)
			continue;
		kn = (size_t) (eq - k);
		v = eq + 1;
		vl = (size_t) ((semi ? semi : end) - v);
		trim(&k, &kn);
		trim(&v, &vl);
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"')
			v++, vl -= 2;
		if (word_is(k, kn, "q")) {
			*ret_q = qvalue(v, vl);
		} else if (word_is(k, kn, "version")) {
			version = v;
			vn = vl;
		}
	}
	if (version != NULL && kind == 1 && !word_is(version, vn, "1.0.0") &&
	    !word_is(version, vn, "0.0.1"))
		kind = -1;
	if (version != NULL && kind == 0 && !word_is(version, vn, "0.0.4"))
		kind = -1;
	return kind;
}

bool metrics_wants_openmetrics(const char *accept_header)
{
	const char *s = accept_header;
	int best_q = 0, best = 0;

	while (s != NULL && *s) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t) (comma - s) : strlen(s);
		int q, kind = media_range(s, n, &q);

		if (kind >= 0 && q > best_q) {
			best_q = q;
			best = kind;
		}
		s = comma ? comma + 1 : NULL;
	}
	return best == 1;
}
