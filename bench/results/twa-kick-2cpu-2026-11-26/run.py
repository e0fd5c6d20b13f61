import json, random, subprocess, statistics, sys
B="/work/main/.venv/lib/python3.11/site-packages/locktune/_native/bin/locktune-lockbench"
res={}
cfgs=[("glibc",None,["--lock","pthread"]),("twa-old","/tmp/oldlib",["--lock","lt","--algo","twa"]),("twa-new","/tmp/newlib",["--lock","lt","--algo","twa"]),("ticket","/tmp/newlib",["--lock","lt","--algo","ticket"])]
for threads,delay in ((1,0),(2,100),(4,100)):
    for r in range(7):
        random.shuffle(cfgs)
        for name,lib,args in cfgs:
            env=dict(__import__('os').environ)
            if lib: env["LD_LIBRARY_PATH"]=lib
            out=subprocess.run([B,*args,"--threads",str(threads),"--delay",str(delay),"--duration","0.3","--no-probe","--json"],capture_output=True,text=True,env=env,check=True).stdout
            d=json.loads(out)
            res.setdefault((threads,name),[]).append(d["run"]["ns_per_op"] if threads==1 else d["run"]["throughput_ops_s"]/1e6)
import platform, os
runs=[{"threads":k[0],"lock":k[1],"values":v,"unit":"ns per pair" if k[0]==1 else "M ops/s"} for k,v in sorted(res.items())]
doc={"schema":"locktune-twa-kick/1","date":__import__('time').strftime('%Y-%m-%dT%H:%M:%SZ',__import__('time').gmtime()),
 "machine":{"cpu_model":[l.split(':',1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')][0],"cpus":os.cpu_count(),"kernel":platform.release(),"load_average_end":os.getloadavg()},
 "command":"locktune-lockbench --threads T --delay D --duration 0.3 --no-probe --json, 7 shuffled interleaved rounds; twa-old: liblocktune of cb45a76, twa-new and ticket: this commit, swapped with LD_LIBRARY_PATH",
 "runs":runs}
json.dump(doc,open('/tmp/twa-results.json','w'),indent=1)
import sys; sys.path.insert(0,'/work/main')
from locktune.charts import bar_chart
groups=["1 thread (pair cost)","2 threads","4 threads"]
ser={}
for name in ("twa-old","twa-new","ticket"):
    vals=[]
    for t in (1,2,4):
        g=statistics.median(res[(t,"glibc")]); x=statistics.median(res[(t,name)])
        vals.append(round(g/x if t==1 else x/g,3))
    ser[name]=vals
open('/tmp/twa-results.svg','w').write(bar_chart("twa beside glibc: speed ratio (median of 7 rounds; higher is better)",groups,ser,y_label="x glibc",reference=1.0))
for k,v in sorted(res.items()):
    print(k, "median %.2f"%statistics.median(v), "min %.2f max %.2f"%(min(v),max(v)), "ns/op" if k[0]==1 else "M ops/s")
