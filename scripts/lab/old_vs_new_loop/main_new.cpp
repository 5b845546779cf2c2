#include "fake.hpp"
int main() { FakeDevice d; auto r = req("new.csv"); r.live_progress = false; return run_experiment(r, d); }
