"""The seed's similarity program (../shared/seeds: "Case Study 2: Scientific Computing and Power
Management"), op for op. The changes: the program's body is make_similarity(device), which
returns the seed's similarity(x) for that device (the seed wrote .cuda('cuda:0') and
torch.cuda.synchronize(); here DEVICE, and the synchronisation only on CUDA), and x is the
caller's (the seed's is torch.randn((256,270725)), which run.py makes at the size it is given).

On PyTorch 2.11 with CUDA the seed's program stops at its first torch.cat: mode
'reduce-overhead' replays a CUDA graph per call of similarity_op, whose output is overwritten by
the next replay ("accessing tensor output of CUDAGraphs that has been overwritten by a subsequent
run"). similarity(x, clone_outputs=True) adds the one op PyTorch's message asks for, a .clone()
of each similarity_op output outside the compiled function; run.py tries the seed as written
first and says which ran.
"""

import torch

MATRIX_BATCH = 1000


def make_similarity(DEVICE):

  @torch.compile(mode='reduce-overhead', backend='inductor')
  def similarity_op(x,y):
      xy = x[:,:,None] - y[:,None,:]
      xy = xy.abs() < 1
      xy = xy.all(axis=0)
      return xy

  _ = similarity_op(torch.randn(1,MATRIX_BATCH),torch.randn(1,MATRIX_BATCH))


  def similarity(x, clone_outputs=False):
      x_slices = torch.split(x, MATRIX_BATCH, -1)
      result = []
      for x_i in x_slices:
          result_i = []
          for x_j in x_slices:
              result_i.append(similarity_op(x_i,x_j).clone() if clone_outputs else similarity_op(x_i,x_j))
          result_i = torch.cat(result_i,-1)
          result_i = result_i.to(device='cpu', non_blocking=True)
          result.append(result_i)
      result = torch.cat(result,-2)
      if torch.device(DEVICE).type == 'cuda':
          torch.cuda.synchronize()
      return result

  return similarity
