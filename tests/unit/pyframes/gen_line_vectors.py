# prints a C test vector for the line table of a sample function, as this interpreter sees it
import sys, dis
src = ("def sample(a):\n"
       "    x = 1\n"
       "    for i in range(a):\n"
       "        if i % 2:\n"
       "            x += i\n"
       "        else:\n"
       "            x -= 1\n"
       + "\n" * 300 +
       "    y = [\n"
       "        x,\n"
       "        a]\n"
       "    return y\n")
ns = {}
exec(compile(src, "sample.py", "exec"), ns)
co = ns["sample"].__code__
v = sys.version_info
if v < (3, 10):
    tab, unit = co.co_lnotab, 1
elif v < (3, 11):
    tab, unit = co.co_linetable, 1
else:
    tab, unit = co.co_linetable, 2
# expected line for each instruction: from the interpreter's own tables
pairs = []
if v >= (3, 11):
    for i, pos in enumerate(co.co_positions()):
        pairs.append((i, pos[0] if pos[0] is not None else -1))
elif v >= (3, 10):
    for s, e, line in co.co_lines():
        for o in range(s, e, 2):
            pairs.append((o, line if line is not None else -1))
else:
    starts = list(dis.findlinestarts(co))
    for o in range(0, len(co.co_code), 2):
        line = co.co_firstlineno
        for s, l in starts:
            if s <= o:
                line = l
        pairs.append((o, line))
name = "py%d%d" % (v[0], v[1])
print("/* %s: sample() compiled by Python %d.%d.%d; co_firstlineno %d */" % (name, v[0], v[1], v[2], co.co_firstlineno))
print("static const uint8_t %s_table[] = {" % name)
for i in range(0, len(tab), 12):
    print("\t" + ", ".join("0x%02x" % b for b in tab[i:i+12]) + ",")
print("};")
print("static const struct line_case %s_cases[] = {" % name)
line = ""
for o, l in pairs:
    line += "{ %d, %d }, " % (o, l)
    if len(line) > 80:
        print("\t" + line.rstrip()); line = ""
if line: print("\t" + line.rstrip())
print("};")
