/*
 * CPython 3.12 (x86-64, default build) offsets, from Include/ at the v3.12 tags and checked
 * with gdb against pyenv's 3.12.1 (ptype/o, offsetof) (tests/unit/pyframes/check_layouts.sh).
 * Included by layout.c only.
 */
static const struct py_layout py312_layout = {
	.major = 3, .minor = 12,
	.frames = PY_FRAMES_INTERP,
	.lines = PY_LINES_LOCATIONS,
	.rt_interp_head = 40,
	.is_next = 0, .is_threads_head = 72,
	.ts_size = 288, .ts_next = 8, .ts_interp = 16, .ts_thread_id = 136, .ts_native_thread_id = 144,
	.ts_frame = PF_NONE, .ts_cframe = 56, .cf_current_frame = 0,
	/* _PyInterpreterFrame: f_code, previous, prev_instr, owner (FRAME_OWNED_BY_CSTACK = 3) */
	.fr_size = 80, .fr_code = 0, .fr_previous = 8, .fr_instr = 56, .fr_is_entry = PF_NONE, .fr_owner = 70,
	.fr_gen = PF_NONE,
	.fr_code_mask = ~0ull, .owner_cstack_min = 3, .owner_generator = 1,
	.co_size = 200, .co_firstlineno = 68, .co_filename = 112, .co_name = 120, .co_qualname = 128,
	.co_linetable = 136, .co_firsttraceable = 176, .co_code_adaptive = 192,
	.ob_type = 8, .ob_size = 16, .tp_name = 24, .bytes_sval = 32,
	/* 3.12 dropped wstr (PyASCIIObject 40, PyCompactUnicodeObject 56) and the ready bit */
	.str_length = 16, .str_state = 32, .str_ascii_size = 40, .str_compact_size = 56,
	.str_kind_shift = 2, .str_compact_bit = 5, .str_ascii_bit = 6, .str_ready_bit = PF_NONE,
	/* threading's registry (threads.c): PyInterpreterState.modules, ht_cached_keys */
	.objs = PY_OBJS_312, .is_modules = 944, .ht_cached_keys = 880,
	/* the GIL (gil.c): interp->ceval.gil points to it; interval, last_holder, locked */
	.rt_gil = PF_NONE, .is_ceval_gil = 384, .gil_locked = 16, .gil_holder = 8,
	/* the cyclic GC (gc.c): PyInterpreterState.gc; its collecting */
	.rt_gc = PF_NONE, .is_gc = 112, .gc_collecting = 200,
};
