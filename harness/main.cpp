#include "harness/cli/cli.h"

int main(int argc, char** argv) { return noeira::run_cli(argc, argv); }
