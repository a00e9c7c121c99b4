/*
 * pprof_proto: what hwspy's pprof writer (pprof.c) and reader (pprof_read.c, pprof_build.c)
 * share about github.com/google/pprof/proto/profile.proto: its field numbers, the protobuf wire
 * types, and the file name given to kernel functions. Internal to output/.
 */
#ifndef HWSPY_OUTPUT_PPROF_PROTO_H
#define HWSPY_OUTPUT_PPROF_PROTO_H

/* Field numbers of profile.proto (the ones hwspy writes or reads). */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_OFFSET = 4, MAPPING_FILENAME = 5,
	MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_FILENAME = 4,
};

/* Protobuf wire types. */
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

/* The file of a kernel function, as perf names the kernel. */
#define KERNEL_FILE "[kernel.kallsyms]"

#endif
