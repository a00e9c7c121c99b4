/*
 * CPython 3.10 (x86-64, default build) offsets, from Include/ at the v3.10 tags and checked
 * with gdb against pyenv's 3.10.13 (ptype/o, offsetof) (tests/unit/pyframes/check_layouts.sh).
 * Included by layout.c only.
 */
static const struct py_layout py310_layout = {
	.major = 3, .minor = 10,
	.lines = PY_LINES_310,
	.ts_size = 280, .fr_size = 360, .fr_instr = 96, /* f_lasti: instruction index */
	.frames = PY_FRAMES_OBJECT,
	.rt_interp_head = 32,
	.is_next = 0, .is_threads_head = 8,
	.ts_next = 8, .ts_interp = 16, .ts_frame = 24, .ts_thread_id = 176,
	.ts_native_thread_id = PF_NONE, .ts_cframe = PF_NONE, .cf_current_frame = PF_NONE,
	.fr_previous = 24, .fr_code = 32,
	.fr_gen = 88, .fr_owner = PF_NONE, .fr_is_entry = PF_NONE, .fr_code_mask = ~0ull,
	.owner_cstack_min = PF_NONE, .owner_generator = PF_NONE,
	.co_size = 176, .co_firstlineno = 40, .co_filename = 104, .co_name = 112,
	.co_qualname = PF_NONE, .co_linetable = 120,
	.co_code_adaptive = PF_NONE, .co_firsttraceable = PF_NONE,
	.ob_type = 8, .ob_size = 16, .tp_name = 24, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
	.str_kind_shift = 2, .str_compact_bit = 5, .str_ascii_bit = 6, .str_ready_bit = 7,
	/* threading's registry (threads.c): PyInterpreterState.modules, ht_cached_keys */
	.objs = PY_OBJS_38, .is_modules = 856, .ht_cached_keys = 872,
	/* the GIL (gil.c): _PyRuntime.ceval.gil; interval, last_holder, locked */
	.rt_gil = 352, .is_ceval_gil = PF_NONE, .gil_locked = 16, .gil_holder = 8,
	/* the cyclic GC (gc.c): PyInterpreterState.gc; its collecting */
	.rt_gc = PF_NONE, .is_gc = 616, .gc_collecting = 200,
};
