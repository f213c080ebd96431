# The seed's post-processing of a trace, as written, except: the trace's path and the figure's
# are arguments (the seed read '/home/log.csv' and called plt.show()), and the timestamps are
# converted with datetime.fromtimestamp(t, timezone.utc), since datetime.utcfromtimestamp is
# deprecated (the same instants, timezone-aware).
# usage: python plot_trace.py TRACE.csv FIGURE.png

import sys
from datetime import datetime, timezone
import pandas as pd
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt

trace_df = pd.read_csv(sys.argv[1],sep=';',header=0)
trace_df['Timestamp'] = trace_df['Timestamp'].map(lambda t: datetime.fromtimestamp(t, timezone.utc))
trace_df.set_index('Timestamp',inplace=True)

fig,ax1 = plt.subplots(1,1,figsize=(12,6))
cols = ['Power [% max]','GPU Util [% time]','Mem Util [% time]','Mem Cons [% max]']
trace_df[cols].plot(ax=ax1)
ax1.set_ylabel('%')
ax1.legend(loc='upper left')

cols = ['Energy [kJ]']
ax2 = ax1.twinx()
trace_df[cols].plot(ax=ax2, linestyle='dashed',color='black')
ax2.set_ylabel('kJ')
ax2.legend(loc='upper right')

fig.tight_layout() 
plt.savefig(sys.argv[2])
