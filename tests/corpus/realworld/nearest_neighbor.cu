/*
 * nearest_neighbor.cu -- the k storm sightings closest to a query location.
 *
 * The GPU computes the distance of every sighting to the query, the host sorts
 * out the k smallest.  Very large inputs need more than 65535 blocks, so the
 * host then switches to a 2-D grid and the kernel flattens (blockIdx.y, blockIdx.x).
 *
 *   ./nn --k 5 --query 29.9,-90.1 --records 2000000 [--quiet]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define NN_THREADS 256          // threads per block
#define GRID_X_LIMIT 65535

typedef struct {
    float lat;
    float lon;
} GeoPoint;

struct Sighting {
    std::string label;
    float dist;
};

__global__ void distanceToQuery(const GeoPoint *points, float *dist, int count, float qlat, float qlon)
{
    const int block = blockIdx.y * gridDim.x + blockIdx.x;
    const int r = block * blockDim.x + threadIdx.x;
    if (r >= count)
        return;
    const float a = points[r].lat - qlat;
    const float b = points[r].lon - qlon;
    dist[r] = sqrtf(a * a + b * b);
}

struct Options {
    int k = 10;
    int records = 1 << 20;
    float qlat = 0.0f, qlon = 0.0f;
    bool quiet = false;
};

static bool parseOptions(int argc, char **argv, Options &opt)
{
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--quiet") { opt.quiet = true; continue; }
        if (i + 1 >= argc) return false;
        if (a == "--k") opt.k = atoi(argv[++i]);
        else if (a == "--records") opt.records = atoi(argv[++i]);
        else if (a == "--query") {
            if (sscanf(argv[++i], "%f,%f", &opt.qlat, &opt.qlon) != 2) return false;
        } else return false;
    }
    return opt.k > 0 && opt.records > 0;
}

static void synthesize(int n, std::vector<GeoPoint> &pts, std::vector<Sighting> &rows)
{
    pts.resize(n);
    rows.resize(n);
    unsigned long long state = 88172645463325252ull;
    for (int i = 0; i < n; ++i) {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17;
        pts[i].lat = (float)(state % 1800000) / 10000.0f - 90.0f;
        pts[i].lon = (float)((state >> 24) % 3600000) / 10000.0f - 180.0f;
        rows[i].label = "sighting #" + std::to_string(i);
    }
}

int main(int argc, char **argv)
{
    Options opt;
    if (!parseOptions(argc, argv, opt)) {
        fprintf(stderr, "usage: %s [--k N] [--query LAT,LON] [--records N] [--quiet]\n", argv[0]);
        return 1;
    }

    std::vector<GeoPoint> pts;
    std::vector<Sighting> rows;
    synthesize(opt.records, pts, rows);

    const int blocks = (opt.records + NN_THREADS - 1) / NN_THREADS;
    dim3 grid(std::min(blocks, GRID_X_LIMIT), (blocks + GRID_X_LIMIT - 1) / GRID_X_LIMIT);

    GeoPoint *d_pts = nullptr;
    float *d_dist = nullptr;
    cudaMalloc(&d_pts, pts.size() * sizeof(GeoPoint));
    cudaMalloc(&d_dist, pts.size() * sizeof(float));
    cudaMemcpy(d_pts, pts.data(), pts.size() * sizeof(GeoPoint), cudaMemcpyHostToDevice);

    distanceToQuery<<<grid, NN_THREADS>>>(d_pts, d_dist, opt.records, opt.qlat, opt.qlon);
    if (cudaDeviceSynchronize() != cudaSuccess) {
        std::cerr << "distanceToQuery failed: " << cudaGetErrorString(cudaGetLastError()) << "\n";
        return 1;
    }

    std::vector<float> dist(opt.records);
    cudaMemcpy(dist.data(), d_dist, dist.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < opt.records; ++i) rows[i].dist = dist[i];

    const int k = std::min(opt.k, opt.records);
    std::nth_element(rows.begin(), rows.begin() + (k - 1), rows.end(),
                     [](const Sighting &x, const Sighting &y) { return x.dist < y.dist; });
    std::sort(rows.begin(), rows.begin() + k, [](const Sighting &x, const Sighting &y) { return x.dist < y.dist; });
    if (!opt.quiet)
        for (int i = 0; i < k; ++i) std::cout << rows[i].label << "  " << rows[i].dist << "\n";

    cudaFree(d_pts);
    cudaFree(d_dist);
    return 0;
}
