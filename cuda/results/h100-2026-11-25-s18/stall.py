import csv, sys
f = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
rows = list(csv.reader(open(f)))
h = rows[1]; data = rows[2:]
si = h.index('Warp Stall Sampling (All Samples)'); ni = h.index('Warp Stall Sampling (Not-issued Samples)'); src = h.index('Source')
stall_cols = [i for i, c in enumerate(h) if c.startswith('stall_') or 'Stall' in c]
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
tot = sum(num(r[si]) for r in data); totn = sum(num(r[ni]) for r in data)
print('total samples', tot, 'not issued', totn)
# per-opcode aggregation
from collections import Counter
agg = Counter(); aggn = Counter()
for r in data:
    op = r[src].split()[0] if r[src].split() else '?'
    if op.startswith('@'): op = r[src].split()[1]
    op = op.split('.')[0]
    agg[op] += num(r[si]); aggn[op] += num(r[ni])
for op, v in agg.most_common(25): print('%-12s %6.2f%% (not issued %6.2f%%)' % (op, 100*v/tot, 100*aggn[op]/tot))
print()
for i, r in enumerate(data):
    pass
top = sorted(range(len(data)), key=lambda i: -num(data[i][si]))[:n]
for i in sorted(top): print('%5d %6.2f%% %6.2f%% %s' % (i, 100*num(data[i][si])/tot, 100*num(data[i][ni])/tot, data[i][src][:100]))
