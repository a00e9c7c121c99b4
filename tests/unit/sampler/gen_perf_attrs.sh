#!/bin/sh
# Regenerates the expectations of test_events.c from perf itself:
#   tests/unit/sampler/gen_perf_attrs.sh            (as root, from anywhere)
# For every event spec below, runs `perf stat -vv -e SPEC true` and records the first
# perf_event_attr perf prints (perf prints it even where the event cannot be opened, e.g. no
# hardware PMU). Specs perf refuses are recorded as "error". Two tables:
#   perf_attrs.txt          against this machine's /sys (named, cache, raw, software/ msr/ uprobe/)
#   perf_attrs_fixture.txt  against the fixture PMU in sysfs/ (perf reads it via SYSFS_PATH)
# Columns: spec type config config1 config2 exclude_user exclude_kernel exclude_hv exclude_host
#          exclude_guest exclude_idle precise_ip    (or: spec error)
# Every name and alias in events_table() must have a row: test_events.c checks that.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
command -v perf >/dev/null || { echo "perf not found" >&2; exit 1; }

named="cycles cpu-cycles instructions cache-references cache-misses branch-instructions branches
branch-misses bus-cycles stalled-cycles-frontend idle-cycles-frontend stalled-cycles-backend
idle-cycles-backend ref-cycles
L1-dcache-loads L1-dcache-load-misses L1-dcache-stores L1-dcache-store-misses L1-dcache-prefetches
L1-dcache-prefetch-misses L1-icache-loads L1-icache-load-misses L1-icache-prefetches
L1-icache-prefetch-misses LLC-loads LLC-load-misses LLC-stores LLC-store-misses LLC-prefetches
LLC-prefetch-misses dTLB-loads dTLB-load-misses dTLB-stores dTLB-store-misses dTLB-prefetches
dTLB-prefetch-misses iTLB-loads iTLB-load-misses branch-loads branch-load-misses node-loads
node-load-misses node-stores node-store-misses node-prefetches node-prefetch-misses
cpu-clock task-clock page-faults faults minor-faults major-faults context-switches cs
cpu-migrations migrations alignment-faults emulation-faults cgroup-switches bpf-output dummy"

cache_aliases="l1d-load-miss L1-data-store L1-dcache-load-refs L1-dcache-misses LLC L2 L2-Reference
Data-TLB-write d-tlb-loads i-tlb-miss Instruction-TLB-load-misses bpu-miss btb bpc-access
branch-miss branches-loads node-speculative-read node-speculative-load-misses LLC-prefetch-miss
L1-icache-speculative-read L1-instruction-misses l1i-load LLC-misses-load LLC-read-ops node-ops
l1-i-write-access branches-load-misses branches-miss bpc-miss Branch-loads NODE-loads
node-Loads"

modifiers="cycles:u cycles:k cycles:h cycles:uk cycles:ku cycles:uh cycles:kh cycles:ukh cycles:hku
cycles:G cycles:H cycles:GH cycles:HG cycles:Hk cycles:kH cycles:uG cycles:Gu cycles:kG cycles:p
cycles:pp cycles:ppp cycles:pu cycles:up cycles:Gp cycles:pG cycles:Hp cycles:I cycles:uI
cycles:upp cycles:ukppp cycles:GHuk instructions:u cache-misses:pp branch-misses:k ref-cycles:uh
page-faults:u page-faults:k cpu-clock:k cpu-clock:u task-clock:uk cs:u minor-faults:G
context-switches:H dummy:u L1-dcache-load-misses:u LLC-loads:k dTLB-load-misses:ppp
cycles:uu cycles:pppp cycles:z cycles:u:k cycles:x cycles:upx"

raw="r0 r1 r1a2 rABC rabc r1a2:u r1a2:ppk rffffffffffffffff r0123456789abcdef r12345678901234567
r0x1a2 rabcz r1g"

pmu="software// software/config=0x2/ software/config=2,config1=5/ software/config/
software/config=010/ software/config=2,config=3/ software/config=2/u software/config=2/uk
software/config=0x2,name=foo/ software/config1=7,config2=0x9/ software/config=2/:u
software/event=1/ software/config=0x/ software/config=2 software/config=2,/ nosuchpmu/config=1/
msr/tsc/ msr/TSC/ msr/event=0x1/ msr/event=1,event=2/ msr/tsc,config1=3/ msr/tsc/k
uprobe/retprobe/ uprobe/retprobe,ref_ctr_offset=0x10/ uprobe/retprobe=2/ uprobe/nosuchterm=1/"

unknown="CYCLES Cache-Misses cache-mises cpu-clk l1-dcache-loads L1-DCACHE-loads LLC-loads-foo
iTLB-stores L1-icache-stores branch-stores nosuchevent"

fixture="cpu/event=0x3c/ cpu/event=0x3c,umask=0x1/ cpu/event=0x1a3,umask=2,edge,ldlat=9,extra2=0x1234/
cpu/event=0xfff/ cpu/cpu-cycles/ cpu/CPU-CYCLES/ cpu/instructions/uk cpu/mem-loads/u
cpu/mem-loads,ldlat=64/pp cpu/config=0x1234,config1=5,config2=6/ cpu/event=0x3c,cmask=1,inv/k
cpu/ref-cycles/H cpu/event=0x3c,config=0x100/ cpu/topdown-slots/ cpu/uops-split/
cpu/offcore=0xffffffffffff/ cpu/any,event=1/ cpu/event=0x1fff/ cpu/umask=0x100/ cpu/edge=2/
cpu/nosuchevent/ cpu/mem-loads=1/ cpu/event=0x3c/z"

# one row for SPEC from the first perf_event_attr block perf prints
row() {
	perf stat -vv -e "$1" true 2>&1 | awk -v spec="$1" '
		/^perf_event_attr:/ { inattr = 1; seen = 1; next }
		inattr && /^-----/ { inattr = 0; done = 1 }
		inattr && !done {
			v = $NF
			if ($1 == "{") key = $3; else key = $1
			sub(/,$/, "", key)
			if (key == "bp_addr") key = "config1"
			if (key == "bp_len") key = "config2"
			a[key] = v
		}
		END {
			if (!seen) { print spec, "error"; exit }
			n = split("type config config1 config2 exclude_user exclude_kernel exclude_hv exclude_host exclude_guest exclude_idle precise_ip", k, " ")
			line = spec
			for (i = 1; i <= n; i++) {
				v = (k[i] in a) ? a[k[i]] : 0
				if (k[i] ~ /^config/ && v !~ /^0x/) v = sprintf("0x%x", v)
				line = line " " v
			}
			print line
		}'
}

header() {
	echo "# generated by gen_perf_attrs.sh from $(perf --version) ($1), $(uname -r); do not edit"
	echo "# spec type config config1 config2 exclude_user exclude_kernel exclude_hv exclude_host exclude_guest exclude_idle precise_ip"
}

{
	header "sysfs: /sys"
	for s in $named $cache_aliases $modifiers $raw $pmu $unknown; do row "$s"; done
} > "$here/perf_attrs.txt"

# perf reads sysfs from $SYSFS_PATH: a root with the fixture's PMU and the real /sys/devices
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bus/event_source/devices"
cp -r "$here/sysfs/bus/event_source/devices/cpu" "$tmp/bus/event_source/devices/"
ln -s /sys/devices "$tmp/devices"
{
	header "sysfs: tests/unit/sampler/sysfs"
	for s in $fixture; do SYSFS_PATH=$tmp row "$s"; done
} > "$here/perf_attrs_fixture.txt"
echo "wrote $here/perf_attrs.txt and $here/perf_attrs_fixture.txt"
