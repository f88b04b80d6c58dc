// helper_timer.h -- a tiny wall-clock stopwatch for the samples (host only).
#ifndef COMMON_HELPER_TIMER_H
#define COMMON_HELPER_TIMER_H

#include <chrono>

class StopWatch {
  public:
    void start() { t0_ = std::chrono::high_resolution_clock::now(); running_ = true; }
    void stop()
    {
        if (running_) {
            total_ += std::chrono::duration<double, std::milli>(std::chrono::high_resolution_clock::now() - t0_).count();
            ++laps_;
            running_ = false;
        }
    }
    void reset() { total_ = 0.0; laps_ = 0; running_ = false; }
    double getTime() const { return total_; }
    double getAverageTime() const { return laps_ ? total_ / laps_ : 0.0; }

  private:
    std::chrono::high_resolution_clock::time_point t0_;
    double total_ = 0.0;
    int laps_ = 0;
    bool running_ = false;
};

#endif
