/*********************************************************************
 * bfs_kernel.cu -- level-synchronous breadth-first search, two kernels
 * per level:
 *
 *   Kernel   every frontier node leaves the frontier and flags its
 *            unvisited neighbours (their level is its level + 1)
 *   Kernel2  the flagged nodes form the new frontier and are visited;
 *            *more tells the host to run another level
 *
 * Launched with MAX_THREADS_PER_BLOCK threads per block (1-D).
 *********************************************************************/
#ifndef _BFS_KERNEL_CU_
#define _BFS_KERNEL_CU_

#define MAX_THREADS_PER_BLOCK 512

// adjacency of one node: edges [first, first + count) of the edge array
struct Node
{
	int first;
	int count;
};

__global__ void
Kernel(const Node *nodes, const int *edges, bool *frontier, bool *next, const bool *visited, int *level, int n)
{
	int v = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
	if (v >= n || !frontier[v])
		return;

	frontier[v] = false;
	Node me = nodes[v];
	for (int e = me.first; e < me.first + me.count; e++)
	{
		int u = edges[e];
		if (!visited[u])
		{
			level[u] = level[v] + 1;
			next[u] = true;
		}
	}
}

__global__ void
Kernel2(bool *frontier, bool *next, bool *visited, bool *more, int n)
{
	int v = blockIdx.x * MAX_THREADS_PER_BLOCK + threadIdx.x;
	if (v < n && next[v])
	{
		frontier[v] = true;
		visited[v] = true;
		*more = true;
		next[v] = false;
	}
}

#endif
