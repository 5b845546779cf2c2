#include "fake.hpp"
int main() { FakeDevice d; return run_experiment(req("old.csv"), d); }
