"""How the usage-memory weight was chosen, on DEV data only (ToolLens train queries; the test
queries are not used).

    python bench/search_memory_tune.py

Scenes (gold tool sets) of the train queries are split in two halves A/B by a hash:
``cross`` remembers half A and evaluates every 10th query of half B (no shared template);
``shared`` remembers every other query of half A and evaluates every 10th of the rest (shared
templates: the optimistic case). Prints R@5 per weight for BM25-only and hybrid search.
Chosen: 0.3 (hybrid: cross 34.12 -> 34.18, shared 35.64 -> 49.19; higher weights lose on cross).
"""
import hashlib
from search_data import EVAL_DIR, load_tools, to_records, load_queries, load_qrels, summarize
from search_hybrid import build_index, usage_memory
recs,q2id=to_records(load_tools(EVAL_DIR/'toollens/normalized/tools.jsonl'))
id2q={v:k for k,v in q2id.items()}
tr=load_qrels(EVAL_DIR/'toollens/normalized/qrels_train.tsv'); tq=[(q,t) for q,t in load_queries(EVAL_DIR/'toollens/normalized/queries_train.jsonl') if q in tr]
h=lambda g:int(hashlib.sha256(",".join(sorted(g)).encode()).hexdigest(),16)%2
A=[x for x in tq if h(tr[x[0]])==0]; B=[x for x in tq if h(tr[x[0]])==1]
splits={'cross':(A,B[::10]),'shared':(A[::2],A[1::2][::10])}
for dense in (False,True):
  idx,_=build_index(recs,dense=dense,query_cache=100000)
  for w in (0.0,0.1,0.3,0.5,1.0):
    idx.memory_weight=w; out=[]
    for name,(mem,dev) in splits.items():
      idx.set_memory({})
      if w: usage_memory(idx,mem,tr,id2q)
      r={q:[q2id[x.tool.qualified_name] for x in idx.search(t,limit=10).hits] for q,t in dev}
      out.append((name,round(summarize(r,tr,[0])['r@5'],2)))
    print('dense' if dense else 'lexical',w,out,flush=True)
