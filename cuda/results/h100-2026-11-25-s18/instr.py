import csv, sys
from collections import Counter
rows = list(csv.reader(open(sys.argv[1])))
h = rows[1]; data = rows[2:]
ei = h.index('Instructions Executed'); src = h.index('Source')
def num(x):
    try: return float(x.replace(',', ''))
    except: return 0.0
agg = Counter()
for r in data:
    t = r[src].split()
    if not t: continue
    op = t[1] if t[0].startswith('@') else t[0]
    agg[op.split('.')[0]] += num(r[ei])
tot = sum(agg.values()); print('total warp instructions %.3g' % tot)
for op, v in agg.most_common(30): print('%-12s %6.2f%%  %.3g' % (op, 100*v/tot, v))
