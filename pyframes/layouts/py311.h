/*
 * CPython 3.11 (x86-64, default build) offsets, from Include/ at the v3.11 tags and checked
 * with gdb against pyenv's 3.11.7 (ptype/o, offsetof) (tests/unit/pyframes/check_layouts.sh).
 * Included by layout.c only.
 */
static const struct py_layout py311_layout = {
	.major = 3, .minor = 11,
	.frames = PY_FRAMES_INTERP,
	.lines = PY_LINES_LOCATIONS,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 16,
	.ts_size = 360, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 152, .ts_native_thread_id = 160,
	.ts_frame = PF_NONE, .ts_cframe = 56, .cf_current_frame = 8,
	/* _PyInterpreterFrame: f_code, previous, prev_instr, is_entry, owner */
	.fr_size = 80, .fr_code = 32, .fr_previous = 48, .fr_instr = 56, .fr_is_entry = 68, .fr_owner = 69,
	.fr_gen = PF_NONE,
	.fr_code_mask = ~0ull, .owner_cstack_min = PF_NONE, .owner_generator = 1,
	.co_size = 192, .co_firstlineno = 72, .co_filename = 112, .co_name = 120, .co_qualname = 128,
	.co_linetable = 136, .co_firsttraceable = 168, .co_code_adaptive = 184,
	.ob_type = 8, .ob_size = 16, .tp_name = 24, .bytes_sval = 32,
	.str_length = 16, .str_state = 32, .str_ascii_size = 48, .str_compact_size = 72,
	.str_kind_shift = 2, .str_compact_bit = 5, .str_ascii_bit = 6, .str_ready_bit = 7,
	/* threading's registry (threads.c): PyInterpreterState.modules, ht_cached_keys */
	.objs = PY_OBJS_311, .is_modules = 888, .ht_cached_keys = 872,
	/* the GIL (gil.c): _PyRuntime.ceval.gil; interval, last_holder, locked */
	.rt_gil = 360, .is_ceval_gil = PF_NONE, .gil_locked = 16, .gil_holder = 8,
	/* the cyclic GC (gc.c): PyInterpreterState.gc; its collecting */
	.rt_gc = PF_NONE, .is_gc = 648, .gc_collecting = 200,
};
