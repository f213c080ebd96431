"""The seed's inverse-Gaussian script (../shared/seeds: "the inverse Gaussian's convergence to the
normal"), op for op. The only changes: the script's body is the function figure(), which returns
the figure and the right panel's points instead of calling plt.show() (the caller shows or saves
it), and the raw-string prefix on the two LaTeX labels (Python 3.12 warns on '\\l' otherwise).
"""

import numpy as np
import matplotlib.pyplot as plt
from scipy.stats import invgauss, norm


def figure():
    fig, axs = plt.subplots(1,2, figsize=(12,4))

    # Part 1: evaluate total variation
    mus = np.linspace(0.5,0.00001,100)
    out = []

    for mu in mus:

      # construct Inverse Gaussian
      Z = invgauss(mu=mu)
      mean = Z.mean()
      std = Z.std()
      k = (mean/std)**2

      # standardise and compare with normal
      Z_std = invgauss(mu=mu,loc=-mean/std,scale=1/std)
      Norm = norm(0,1)

      xs = np.linspace(-10,10,1000)
      metric = np.abs(Z_std.pdf(xs) - Norm.pdf(xs)).mean()*20
      result = (k,metric)
      out.append(result)


    ax = axs[1]
    ax.plot(*zip(*out))
    ax.set_xscale('log')
    ax.set_xlabel(r'$\lambda / \mu$')
    ax.set_yscale('log')
    ax.set_ylabel('total-variation to normal')

    # Part 2: plot pdf

    ax = axs[0]
    for mu in [0.2,0.1,0.05,0.01,0.0001]:

      # construct Inverse Gaussian
      Z = invgauss(mu=mu)
      mean = Z.mean()
      std = Z.std()
      k = (mean/std)**2

      # standardise and plot
      Z_std = invgauss(mu=mu,loc=-mean/std,scale=1/std)

      xs = np.linspace(-5,5,10000)

      ax.plot(xs,Z_std.pdf(xs), label=rf'$\lambda/\mu$={k:.2f}')

    ax.legend(title="standardised distribution")
    ax.set_xlabel('$x$')
    ax.set_ylabel('pdf')

    plt.tight_layout()
    return fig, out
