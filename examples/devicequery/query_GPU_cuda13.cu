// query_GPU.cu, changed in one place to compile with CUDA 13, where cudaDeviceProp lost
// memoryClockRate: the clock is read with cudaDeviceGetAttribute (kHz, as the field was).

#include <stdio.h> 

int main() {
  int nDevices;

  cudaGetDeviceCount(&nDevices);
  for (int i = 0; i < nDevices; i++) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, i);
    int memoryClockRate;  // changed: was prop.memoryClockRate
    cudaDeviceGetAttribute(&memoryClockRate, cudaDevAttrMemoryClockRate, i);
    printf("Device Number: %d\n", i);
    printf("  Name: %s\n", prop.name);
    printf("  Integrated: %d\n", prop.integrated);
    printf("  Compute capability: %d.%d\n", prop.major, prop.minor );
    printf("  Peak Memory Bandwidth (GB/s): %f\n\n",
           2.0*memoryClockRate*(prop.memoryBusWidth/8)/1.0e6);
    printf( "  Total global mem: %ld\n", prop.totalGlobalMem );
    printf( "  Multiprocessor count: %d\n", prop.multiProcessorCount );
  }
}
