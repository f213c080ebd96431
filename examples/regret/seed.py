"""The seed's regret matching in PyTorch (../shared/seeds: "Approximate Nash Equilibrium by Regret
Matching"), op for op. The changes: the device is an argument (the seed wrote .cuda() and ended
with torch.cuda.synchronize(); here DEVICE, and the synchronisation only on CUDA), and the compile
mode is one (the seed's is 'max-autotune'; on the CPU, where that autotunes every kernel, run.py
passes 'default' unless told otherwise). make_equilibrium(device, mode) returns the seed's
getEquilibrium for that device and mode.
"""

import torch


def make_equilibrium(DEVICE, mode='max-autotune'):

  ## Utils

  def getStrategy(cfr):
    """Return a strategy corresponding to observed regrets
    Args:
      cfr (array): counter-factual regret, shape (N_ACTIONS,)
    Returns:
      weights (array): strategy, shape (N_ACTIONS,)
    """
    weights = torch.clip(cfr,0,torch.inf)
    weights = weights/torch.sum(weights)
    N_ACTIONS = weights.shape[0]
    weights = torch.nan_to_num(weights,nan=1/N_ACTIONS)
    return weights

  #@torch.jit.script
  @torch.compile(mode=mode)
  def getEquilibrium(PAYOFF, N_ITER:int = 500, stochastic_advantage:bool=False):
    # auxiliary variables
    N_ACTIONS = PAYOFF.shape[0]
    cumCFR1 = torch.zeros(N_ACTIONS,).to(DEVICE)
    cumCFR2 = torch.zeros(N_ACTIONS,).to(DEVICE)
    cumStrategy1 = torch.zeros(N_ACTIONS,).to(DEVICE)
    cumStrategy2 = torch.zeros(N_ACTIONS,).to(DEVICE)
    strategy1 = torch.ones(N_ACTIONS,).to(DEVICE)/N_ACTIONS
    strategy2 = torch.ones(N_ACTIONS,).to(DEVICE)/N_ACTIONS
    # training loop
    for _ in range(N_ITER):
      # sample actions and observe regrets
      if stochastic_advantage:
        # a) stochastic variant, often implemented in tutorials
        action1 = torch.multinomial(strategy1,num_samples=1).squeeze()
        action2 = torch.multinomial(strategy2,num_samples=1).squeeze()
        cfr1 = PAYOFF[:,action2]-PAYOFF[action1,action2]
        cfr2 = - (PAYOFF[action1,:]-PAYOFF[action1,action2])
      else:
        # b) averaged variant
        PAYOFF_avg = strategy1.view(1,-1).mm(PAYOFF).mm(strategy2.view(-1,1))
        cfr1 = (PAYOFF.mm(strategy2.view(-1,1))-PAYOFF_avg).squeeze()
        cfr2 = (strategy1.view(1,-1).mm(PAYOFF)-PAYOFF_avg).squeeze() * (-1)
      # update strategies proportionally to regrets
      strategy1 = getStrategy(cumCFR1)
      strategy2 = getStrategy(cumCFR2)
      # track cumulated regrets and strategies
      cumCFR1 += cfr1
      cumCFR2 += cfr2
      cumStrategy1 += strategy1
      cumStrategy2 += strategy2

    # averaged strategies converge to Nash Equilibrium
    avgStrategy1 = cumStrategy1/cumStrategy1.sum()
    avgStrategy2 = cumStrategy2/cumStrategy2.sum()
    # estimate approximation error (upper bound)
    eps = 2*torch.max(cumCFR1.max(),cumCFR2.max())/N_ITER
    if torch.device(DEVICE).type == 'cuda':
      torch.cuda.synchronize()
    return (avgStrategy1,avgStrategy2,eps)

  return getEquilibrium


## Game: Rock-Paper-Scissors with Crash, the equilibrium achieved with 25%/50%/25%

N_ACTIONS = 3 # 0: rock, 1: paper, 2: scissors
PAYOFF = [[0,-1,2], [1,0,-1], [-2,1,0]] # gain of row player / loss of col player (a tensor on DEVICE in run.py)
