"""The hot GPU kernels bench/sass_report.py reads: one Kernel entry each, with where its code is,
what its element is, its floor and its budgets (docs/machine-code.md). A new kernel is one entry
here."""


class Kernel:
    """One hot kernel: where its code is, what its element is and what it should cost.

    function: a regular expression on the demangled name. marker: an opcode prefix occurring
    once per element in the steady loop (the loop with the most of them), so that markers per
    iteration count its elements. cold: source definitions (file, signature) whose inlined
    instructions are off the steady path (a rare branch, a block's one-off work). model:
    "issue" (floor: instructions per element) or "memory" (floor: bytes per element at HBM
    bandwidth) or "compute" (an element's bytes in and out against its instructions), or None
    (no floor, the code's figures alone). budgets: {metric: (limit, "max" or "min")}.
    markers_per_element: markers of one element (4 stores per entry of a regret move, say).
    whole: a kernel without a steady loop (each thread a fixed number of elements): the whole
    function is its path. elements: a fixed count of elements per pass of the steady loop, where
    no one instruction marks an element. output_bytes: bytes written per output of an "issue"
    kernel whose element is one of several per output (a pair's count over its samples), for the
    reduction length below which its writes outrun HBM. measured: (the GPU suite's benchmark
    JSON, a pattern of benchmark names, the counter, and what it is: "fraction" of the floor,
    "elements/s" or "bytes/s"), which --measured reads. trips: [(path, signature, trips)], loops
    inside the steady loop that run a data-dependent number of times per pass: the instructions of
    the definition or block starting at signature count `trips` times (an expected count; nested
    blocks multiply). dynamic_shared: bytes of shared memory a launch asks for beyond the static
    (which the resource usage alone shows). versus: (another kernel's name, its elements per one of this kernel's), for
    the predicted throughput of this kernel as a multiple of that one's (same work, other method). shapes: problems
    (SORTED_SHAPES) at which the sorted method's block kernel and its sort pass (SORT_PASS) together are predicted
    against the versus kernel. A trips path is the project's, or a library header's (cub/...) as the code's lines
    name it. measured_versus: ((JSON, pattern), (the other kernel's JSON, pattern)), two of the GPU suite's benchmarks of
    the same problem, whose median times --measured prints as this kernel's measured multiple of the other's.
    """

    def __init__(self, name, obj, function, marker, element, threads, model, floor=None, cold=(), budgets=None,
                 note="", markers_per_element=1, whole=False, measured=None, elements=None, output_bytes=None,
                 trips=(), versus=None, dynamic_shared=0, shapes=(), measured_versus=None):
        self.name, self.obj, self.function, self.marker = name, obj, function, marker
        self.shapes, self.measured_versus = shapes, measured_versus
        self.trips, self.versus, self.dynamic_shared = trips, versus, dynamic_shared
        self.measured, self.elements, self.output_bytes = measured, elements, output_bytes
        self.markers_per_element, self.whole = markers_per_element, whole
        self.element, self.threads, self.model, self.floor = element, threads, model, floor
        self.cold, self.budgets, self.note = cold, budgets or {}, note


SIMILARITY = "similarity/fused.cu.o"
INVGAUSS = "invgauss/fused.cu.o"
REGRET_LARGE = "regret/large_games.cu.o"
REGRET_GEMV = "regret/dual_gemv.cu.o"
# A move block's partial sums and their totals: once per block, not per entry.
MOVE_BLOCK_SUMS = [("kernels/regret/large_games.cu", r"__device__ double total\(int kind"),
                   ("kernels/regret/large_games.cu", r"__device__ void store_partial\(int kind")]
SIMILARITY_BUDGETS = {
    "instructions per element": (3.25, "max"),
    "local accesses between first and last compare": (0, "max"),
    "vector stores": (1, "min"),  # a thread's 8 contiguous outputs of a row, where the row is aligned
}
# Mode all adds its block vote to each 16-sample stage: a compare and an OR per count, 64 per 1024.
SIMILARITY_ALL_BUDGETS = dict(SIMILARITY_BUDGETS, **{"instructions per element": (3.35, "max")})
# The sorted kernel's merge, per pass and thread: a loop over 16 rows (kept a loop) that move
# their end by about one rank each, so each row's walk tests its condition about twice.
SORTED_MERGE_TRIPS = [("kernels/similarity/sorted_block.hpp", r"for \(int k = k0; k < k1; \+\+k\) \{", 16),
                      ("kernels/similarity/sorted_block.hpp", r"while \(before\(x, v\[lo\]\)\) \{", 2)]
SORTED_SHARED = 96672  # sizeof(sorted_gpu::Shared), which sorted.cu asserts
# The GPU suite's sorted and fused kernels at 256 x 16384^2 with y a copy, on device arrays.
FUSED_LARGE = ("bench_similarity_large_device.json", r"^similarity/fused-plain/cuda/")
SORTED_LARGE_PLAIN = r"^similarity/sorted-plain/cuda/"
# The sort pass's CUB merge sort, per lane and sample: 5 merge rounds (pairs of 1, 2, 4, 8, 16
# lanes' runs), each finding its merge path by a binary search over at most 8, 16, ... 128 keys
# (about 5 steps on average).
SORT_MERGE_TRIPS = [("cub/block/block_merge_sort.cuh", r"for \(int target_merged_threads_number = 2;", 5),
                    ("cub/block/block_merge_sort.cuh", r"while \(keys1_begin < keys1_end\)", 5)]
SORT_PASS = "similarity sorted, sort pass"
# The sorted method's whole cost (its blocks and its sort pass, each operand sorted once per call)
# against the fused kernel's at: (label, samples, pairs, values sorted per sample). The real case
# is hpcml-similarity's: 34 calls of 8192 rows (tools/similarity/blocks.cpp), each over the
# columns from its band's diagonal on (the pairs above the diagonal), each sorting its band and
# those columns: about 270725 + 34 x 270725 / 2 values.
REAL_N = 270725
SORTED_SHAPES = [("256 x 16384, y a copy", 256, 16384 * 16384, 2 * 16384),
                 ("the seed's real case as hpcml-similarity's pair list, 256 x 270725, --tile 8192", 256,
                  REAL_N * REAL_N // 2, REAL_N + 34 * REAL_N // 2)]


def sorted_kernel(name, output, one_block=False, budgets=None, **entry):
    """A build of the sorted block kernel for one output type (an Outputs entry's name): its pass
    as the element's steady loop, and its results stored in 16-byte vectors (staged per round)."""
    return Kernel(f"similarity sorted, {name}", "similarity/sorted.cu.o",
                  rf"similarity_sorted_kernel<hpcml::detail::similarity::{output}, {str(one_block).lower()}>",
                  "LDS.128", "32 pair-samples (a row's mask word of one sample)", 256, None, elements=64,
                  trips=SORTED_MERGE_TRIPS, dynamic_shared=SORTED_SHARED,
                  budgets=dict(budgets or {}, **{"vector stores": (1, "min")}), **entry)


KERNELS = [
    Kernel("similarity fused, int32 counts", SIMILARITY,
           r"similarity_fused_kernel<.*Store<hpcml::detail::similarity::Int32Output>, true, false, float>",
           "FSET.BF", "pair-sample", 256, "issue", floor=3.0, budgets=SIMILARITY_BUDGETS,
           note="FADD d = x - y, FSET.BF |d| < t, FADD into the count", output_bytes=4,
           measured=("bench_similarity_large_device.json", r"^similarity/fused-plain/cuda/", "floor_fraction", "fraction")),
    Kernel("similarity fused, bool (mode all)", SIMILARITY,
           r"similarity_fused_kernel<.*Store<hpcml::detail::similarity::BoolOutput>, true, true, float>",
           "FSET.BF", "pair-sample", 256, "issue", floor=3.0, budgets=SIMILARITY_ALL_BUDGETS, output_bytes=1),
    # Sorted: a pass of 8 samples per thread is 64 mask words (8 samples x 8 words of its row),
    # each 32 pair-samples; the pass also loads, merges and builds its share of the table.
    sorted_kernel("int32 counts", "Int32Output", versus=("similarity fused, int32 counts", 32),
                  # 128 registers hold the row's ones, twos and fours but not all 7 eights planes: those
                  # are spilled and reloaded once per pass for their ripple (ptxas may hoist a reload
                  # among the pass's last table reads, to hide its latency), about 0.5 per element.
                  budgets={"instructions per element": (25.0, "max"), "predicted x the other kernel": (4.0, "min"),
                           "local accesses in the loop": (40, "max"),
                           f"with its sort pass x the other kernel: {SORTED_SHAPES[0][0]}": (4.0, "min"),
                           f"with its sort pass x the other kernel: {SORTED_SHAPES[1][0]}": (4.0, "min")},
                  shapes=SORTED_SHAPES,
                  measured_versus=(("bench_similarity_large_sorted.json", SORTED_LARGE_PLAIN), FUSED_LARGE),
                  note="per 8 samples and row: 4 LDS.128 and 8 XOR per 8 words, 7 full adders and the eights' "
                       "ripple per word"),
    sorted_kernel("bitmask (mode all)", "BitmaskOutput", versus=("similarity fused, bool (mode all)", 32),
                  budgets={"predicted x the other kernel": (4.0, "min"), "local accesses in the loop": (0, "max")},
                  note="against the fused kernel's pass over every sample (mode all stops both early alike)"),
    # The other outputs' builds of the same pass: their stores must not cost the pass registers.
    *[sorted_kernel(name, entry, budgets={"local accesses in the loop": (limit, "max")},
                    note="as the int32 kernel, its results encoded for this output")
      for name, entry, limit in [("uint16 counts", "UInt16Output", 40), ("uint8 counts", "UInt8Output", 40),
                                 ("bool (mode all)", "BoolOutput", 0)]],
    # The same kernel built for one block per SM (HPCML_SORTED_GPU_BLOCKS_PER_SM=1), which the GPU suite times
    # beside the policy's two: a thread may have 255 registers, so no plane is spilled.
    sorted_kernel("int32 counts, one block per SM", "Int32Output", one_block=True,
                  versus=("similarity fused, int32 counts", 32), budgets={"local memory bytes": (0, "max")},
                  measured_versus=(("bench_similarity_large_sorted_one_block.json", SORTED_LARGE_PLAIN), FUSED_LARGE),
                  note="as the policy's kernel above, with one block (8 warps) an SM"),
    # A warp per segment and sample; the loop over samples holds two 16-byte stores of 8 sorted values.
    Kernel(SORT_PASS, "similarity/sorted.cu.o", r"sort_segments_kernel", "STG.E.128",
           "value-sample (a sample's value in its 256-value segment)", 256, None, elements=8, trips=SORT_MERGE_TRIPS,
           budgets={"instructions per element": (260.0, "max"), "local memory bytes": (0, "max")},
           note="8 values a lane: an odd-even sort of 8 in registers, then CUB's 5 merge rounds through shared memory"),
    Kernel("regret large game, matrix pass (both players)", REGRET_GEMV, r"dual_gemv_kernel<true, true, true>",
           "F2F.F64.F32", "entry of A", 256, "memory", floor=4.0,
           budgets={"widest global load (bits)": (128, "min"), "load bytes in flight per thread": (64, "min"),
                    "global load rounds": (1, "max")},
           note="one float of A per entry; A y and x^T A from the one load",
           # the whole iteration (the pass, its sums and the move) against one pass of A over HBM
           measured=("bench_regret_large.json", r"^regret/fused/cuda/.*/simultaneous", "bytes/s", "bytes/s")),
    Kernel("regret large game, move: observe", REGRET_LARGE, r"move_observe_kernel", "STG", "entry", 256, "memory",
           floor=72.0, markers_per_element=4, whole=True, cold=MOVE_BLOCK_SUMS,
           budgets={"global loads after the first global store": (0, "max"), "global load rounds": (3, "max")},
           note="u, s, R, Q, sum read; R, Q, sum, z written: 72 bytes"),
    Kernel("regret large game, move: play", REGRET_LARGE, r"move_play_kernel", "STG", "entry", 256, "memory",
           floor=24.0, markers_per_element=1, whole=True, cold=MOVE_BLOCK_SUMS,
           budgets={"global loads after the first global store": (0, "max"), "global load rounds": (2, "max")},
           note="z and sum read, s written (and sum, lagged): 24 bytes"),
    Kernel("regret batched, games of up to 32 actions", "regret/batched.cu.o", r"regret_batched_kernel<1>",
           "DADD", "iteration of one game", 256, None, elements=1,  # 8-warp blocks, as many small games launch
           cold=[("kernels/regret/batched.cu", r"__device__ void lane_evaluate\(")],  # at record points only
           budgets={"local memory bytes": (0, "max")},
           note="the iteration loop on one lane of a game's group (the loop with the most FP64 adds); inner loops "
                "(over the runtime action counts) taken once"),
    Kernel("inverse Gaussian pdf, float64", INVGAUSS,
           r"invgauss_elementwise_kernel<double, .*Apply<double, hpcml::detail::invgauss::PdfEntry>",
           "STG", "element", 256, "compute", floor=16.0, budgets={"local memory bytes": (0, "max")},
           note="8 bytes in, 8 out (scalar parameters)",
           measured=("bench_invgauss.json", r"^invgauss/pdf/double/cuda/", "elements/s", "elements/s")),
    Kernel("inverse Gaussian cdf, float64", INVGAUSS,
           r"invgauss_cdf_family_kernel<double, hpcml::detail::invgauss::CdfEntry>",
           "STG", "element", 256, "compute", floor=16.0,
           cold=[("kernels/invgauss/fused.cu", r"for \(unsigned pending = __ballot_sync")],
           budgets={"local memory bytes": (0, "max"), "inner loops on the steady path": (0, "max")},
           note="the bulk path; the far upper tail's quadratures (x >= 5 mu), 8 lanes each, are cold",
           measured=("bench_invgauss.json", r"^invgauss/cdf/double/cuda/", "elements/s", "elements/s")),
]
