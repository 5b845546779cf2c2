# Command-line behaviour on bad input (no GPU needed): a clear message, a non-zero exit, and no
# result file left behind. Then the plot script on a small CSV.
set(_cli ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli_expect.sh)
set(_out ${CMAKE_CURRENT_BINARY_DIR}/cli_out)
file(MAKE_DIRECTORY ${_out})
set(_data ${CMAKE_CURRENT_SOURCE_DIR}/tests/data)
function(gemmlab_cli_test name rc pattern absent)
  add_test(NAME cli.${name} COMMAND ${_cli} ${rc} ${pattern} ${absent} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli SKIP_RETURN_CODE 77)
endfunction()

gemmlab_cli_test(unknown_kernel 2 "unknown kernel 'no_such_kernel'" ${_out}/a.csv
  -- $<TARGET_FILE:gemmlab> run -k no_such_kernel -s 64 -o ${_out}/a.csv)
gemmlab_cli_test(unknown_distribution 2 "distribution" ${_out}/b.csv
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -d gaussian_7 -s 64 -o ${_out}/b.csv)
gemmlab_cli_test(bad_size 2 "size '12x' is not understood" ${_out}/c.csv
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 12x -o ${_out}/c.csv)
gemmlab_cli_test(suite_unknown_key 2 "'sizez' is not a suite key" ${_out}/d.csv
  -- $<TARGET_FILE:gemmlab> run --suite ${_data}/bad_suite_key.toml -o ${_out}/d.csv)
gemmlab_cli_test(suite_bad_syntax 2 "not valid TOML.*line" ${_out}/e.csv
  -- $<TARGET_FILE:gemmlab> run --suite ${_data}/bad_suite_syntax.toml -o ${_out}/e.csv)
gemmlab_cli_test(suite_bad_type 2 "'sizes' entries must be" ${_out}/f.csv
  -- $<TARGET_FILE:gemmlab> run --suite ${_data}/bad_suite_type.toml -o ${_out}/f.csv)
gemmlab_cli_test(suite_missing 2 "suite 'no_such_suite' not found" -
  -- $<TARGET_FILE:gemmlab> run --suite no_such_suite)
# -o makes a missing folder, unless it cannot: here a file stands where a folder would be made.
file(WRITE ${_out}/a_file "not a folder\n")
gemmlab_cli_test(unwritable_output 2 "output folder '.*/a_file/dir' cannot be made: '.*/a_file' is a file, not a folder" -
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 -o ${_out}/a_file/dir/x.csv)
gemmlab_cli_test(output_not_csv 2 "--out must name a .csv file" ${_out}/g.txt
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 -o ${_out}/g.txt)
gemmlab_cli_test(bad_reference_mode 2 "reference 'fast' is not known" ${_out}/h.csv
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 --reference fast -o ${_out}/h.csv)
gemmlab_cli_test(no_gpu 2 "needs a CUDA GPU" ${_out}/i.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 -o ${_out}/i.csv)
# The timing's stopping rule (experiments/report/stopping.hpp): a rule that cannot be followed is refused
# before anything runs, saying why.
gemmlab_cli_test(run_reps_zero 2 "--reps must be at least 1 \\(leave it out to stop on noise\\)" ${_out}/stop1.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --reps 0 -o ${_out}/stop1.csv)
gemmlab_cli_test(run_max_noise_zero 2 "max_noise 0: give the median's relative 95% confidence half-width" ${_out}/stop2.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --max-noise 0 -o ${_out}/stop2.csv)
gemmlab_cli_test(run_time_limit_below_minimum 2 "max_time_ms 1 is below min_time_ms 3" ${_out}/stop3.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --min-time-ms 3 --max-time-ms 1 -o ${_out}/stop3.csv)
# Forms (reference/gemm_form.hpp): a bad --form is refused before anything runs; the forms suite plans its rows.
gemmlab_cli_test(bad_form 2 "form 'alpha=0.5,gamma=2': 'gamma' is not a part of a form" ${_out}/form1.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --form alpha=0.5,gamma=2 -o ${_out}/form1.csv)
gemmlab_cli_test(suite_forms_dry_run 0 "40/40 rows" -
  -- $<TARGET_FILE:gemmlab> run --dry-run --suite forms -o ${_out}/forms_dry.csv --force)
# The quantized suite plans cublaslt_int8_rowwise on its three int8_rowwise distributions.
gemmlab_cli_test(suite_quantized_dry_run 0 "3/3 rows" -
  -- $<TARGET_FILE:gemmlab> run --dry-run --suite quantized -o ${_out}/quantized_dry.csv --force)
# The engine from the command line (no GPU): --dry-run, --shard + merge, --force, --resume, the lock,
# and the example plugin's kernel in a dry run, shards and merge.
add_test(NAME cli.engine COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli_engine.sh $<TARGET_FILE:gemmlab> ${_out}/engine
         $<TARGET_FILE:gemmlab_example_plugin>)
set_tests_properties(cli.engine PROPERTIES LABELS cli)

# Plugins (experiments/engine/plugin.hpp): a malformed one (tests/plugins/fixture.c, one library per
# flaw) stops `run` with exit 2 and a message naming the file, the descriptor and the field, before
# anything is written (no CSV, journal or lock: the pattern's * covers them).
set(_fx ${GEMMLAB_PLUGIN_FIXTURE_DIR})
function(gemmlab_plugin_test name pattern plugin)
  gemmlab_cli_test(plugin_${name} 2 "${pattern}" ${_out}/plugin_${name}.csv*
    -- $<TARGET_FILE:gemmlab> run --plugin ${plugin} -k sgemm_01_naive -s 64 -o ${_out}/plugin_${name}.csv)
endfunction()
gemmlab_plugin_test(missing "plugin .*/no_such_plugin.so does not exist or is not a file" ${_out}/no_such_plugin.so)
gemmlab_plugin_test(not_a_library "plugin .*/fixture.c cannot be loaded as a shared library: "
  ${CMAKE_CURRENT_SOURCE_DIR}/tests/plugins/fixture.c)
gemmlab_plugin_test(no_entry "libgemmlab_fixture_no_entry.so has no entry point gemmlab_plugin_v1"
  ${_fx}/libgemmlab_fixture_no_entry.so)
gemmlab_plugin_test(abi_version "libgemmlab_fixture_abi_version.so: it was built for plugin ABI version 2, and this gemmlab reads version 1"
  ${_fx}/libgemmlab_fixture_abi_version.so)
gemmlab_plugin_test(duplicate_name "kernel 'sgemm_01_naive' is already registered by gemmlab itself"
  ${_fx}/libgemmlab_fixture_duplicate_name.so)
gemmlab_plugin_test(unknown_format "kernel descriptor 0 .'plugin_host_fma'.: input_format 'float32' is not a format"
  ${_fx}/libgemmlab_fixture_unknown_format.so)
gemmlab_plugin_test(null_launch "kernel descriptor 0 .'plugin_host_fma'.: launch is NULL"
  ${_fx}/libgemmlab_fixture_null_launch.so)
gemmlab_plugin_test(bad_multiple "kernel descriptor 0 .'plugin_host_fma'.: m_multiple is 0"
  ${_fx}/libgemmlab_fixture_bad_multiple.so)
# A suite's plugins are read relative to the suite file's folder.
file(WRITE ${_out}/plugin_suite.toml "kernels = [\"all\"]\nsizes = [64]\nplugins = [\"../tests/plugins/libgemmlab_fixture_null_launch.so\"]\n")
gemmlab_cli_test(plugin_in_suite 2 "plugin .*/tests/plugins/libgemmlab_fixture_null_launch.so: kernel descriptor 0 .*launch is NULL"
  ${_out}/plugin_suite.csv* -- $<TARGET_FILE:gemmlab> run --suite ${_out}/plugin_suite.toml -o ${_out}/plugin_suite.csv)
gemmlab_cli_test(plugin_on_order 2 "m_multiple is 0" ${_out}/plugin_order.csv
  -- $<TARGET_FILE:gemmlab> order --plugin ${_fx}/libgemmlab_fixture_bad_multiple.so -k sgemm_01_naive -o ${_out}/plugin_order.csv)
gemmlab_cli_test(plugin_on_predict 2 "m_multiple is 0" ${_out}/plugin_predict.csv
  -- $<TARGET_FILE:gemmlab> predict --plugin ${_fx}/libgemmlab_fixture_bad_multiple.so -k sgemm_01_naive -o ${_out}/plugin_predict.csv)
# The example plugin's kernel in `gemmlab list`, with its numerics (no GPU needed to load it).
add_test(NAME cli.list_plugin COMMAND $<TARGET_FILE:gemmlab> list --plugin $<TARGET_FILE:gemmlab_example_plugin>)
set_tests_properties(cli.list_plugin PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
  "sgemm_plugin_naive +plugin +fp32 +fp32 +fp32 +fp32 +fma +1,1,1 +cc>=5.0.*plugin gemmlab_example_plugin .[^)]*libgemmlab_example_plugin.so, ABI 1, sha256 [0-9a-f]+.:.*sgemm_plugin_naive +fma, fp32 FMA one k at a time in increasing k, output fp32")
gemmlab_cli_test(shard_zero 2 "--shard takes i/n with 1 <= i <= n.*got '0/4'" ${_out}/sh0.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --shard 0/4 -o ${_out}/sh0.csv)
gemmlab_cli_test(shard_malformed 2 "--shard takes i/n" ${_out}/sh1.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --shard 5/4 -o ${_out}/sh1.csv)
gemmlab_cli_test(gpus_absent 2 "--gpus names GPU 99, but this host has" ${_out}/gp0.csv
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 --gpus 99 -o ${_out}/gp0.csv)
gemmlab_cli_test(gpus_malformed 2 "--gpus '0,x' is not understood: give 'all' or GPU indices" ${_out}/gp1.csv
  -- $<TARGET_FILE:gemmlab> run -k sgemm_01_naive -s 64 --gpus 0,x -o ${_out}/gp1.csv)
gemmlab_cli_test(dry_run_gpus 2 "--dry-run runs nothing on a GPU: leave out --gpus" ${_out}/gp2.csv
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive -s 64 --gpus 0 -o ${_out}/gp2.csv)
gemmlab_cli_test(bench_reference_nothing 2 "--no-gpu with --cpu none times nothing" ${_out}/br1.csv
  -- $<TARGET_FILE:gemmlab> bench-reference --no-gpu --cpu none -s 64 -o ${_out}/br1.csv)
gemmlab_cli_test(bench_reference_no_size 2 "no size given is at most 32\\^3" ${_out}/br2.csv
  -- $<TARGET_FILE:gemmlab> bench-reference --no-gpu --cpu 32 -s 64 -o ${_out}/br2.csv)
gemmlab_cli_test(merge_no_out 2 "--out is required" -
  -- $<TARGET_FILE:gemmlab> merge ${_out}/a.csv)
gemmlab_cli_test(merge_shard_not_csv 2 "shard '${_data}/bad_suite_key.toml' is not a .csv file" ${_out}/m9.csv
  -- $<TARGET_FILE:gemmlab> merge ${_data}/dry_run.csv ${_data}/bad_suite_key.toml -o ${_out}/m9.csv)
gemmlab_cli_test(merge_shard_without_meta 2 "has no '.*base.meta.json' beside it" ${_out}/m10.csv
  -- $<TARGET_FILE:gemmlab> merge ${_data}/compare/base.csv -o ${_out}/m10.csv)
# `gemmlab compare` on small CSVs (tests/data/compare/): exit 0, 3, 4 and 2, and the markdown report.
add_test(NAME cli.compare COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli_compare.sh $<TARGET_FILE:gemmlab>
         ${_data}/compare ${_out}/compare)
set_tests_properties(cli.compare PROPERTIES LABELS cli)

# A mistake in the options is named before anything about the output: run from a folder without
# results/ (where each command's default output would go), each answers about its own option.
set(_nores ${_out}/no_results_folder)
file(MAKE_DIRECTORY ${_nores})
function(gemmlab_cli_test_nores name rc pattern)
  add_test(NAME cli.${name} COMMAND ${_cli} ${rc} ${pattern} ${_nores}/results ${ARGN} WORKING_DIRECTORY ${_nores})
  set_tests_properties(cli.${name} PROPERTIES LABELS cli)
endfunction()
gemmlab_cli_test_nores(run_threads_zero 2 "--threads 0: give at least 1 CPU thread"
  -- $<TARGET_FILE:gemmlab> run --threads 0 -k sgemm_01_naive -s 64)
gemmlab_cli_test_nores(run_threads_negative 2 "--threads -2: give at least 1 CPU thread"
  -- $<TARGET_FILE:gemmlab> run --threads -2 -k sgemm_01_naive -s 64 --dry-run)
# --threads 0 is refused by every command that takes --threads, as by run, before anything is read or written.
gemmlab_cli_test(inputs_threads_zero 2 "--threads 0: give at least 1 CPU thread" ${_out}/inputs_threads0
  -- $<TARGET_FILE:gemmlab> inputs -d normal_0_1 -s 64 --threads 0 -o ${_out}/inputs_threads0)
gemmlab_cli_test(evaluate_threads_zero 2 "--threads 0: give at least 1 CPU thread" ${_out}/evaluate_threads0.csv
  -- $<TARGET_FILE:gemmlab> evaluate ${_out}/no_such_inputs --output ${_out}/c.npy --name mine --threads 0
     -o ${_out}/evaluate_threads0.csv)
gemmlab_cli_test(bench_reference_threads_zero 2 "--threads 0: give at least 1 CPU thread" ${_out}/bench_threads0.csv
  -- $<TARGET_FILE:gemmlab> bench-reference --no-gpu -s 64 --threads 0 -o ${_out}/bench_threads0.csv)
gemmlab_cli_test(bench_reference_threads_negative 2 "--threads -3: give at least 1 CPU thread" ${_out}/bench_threads3.csv
  -- $<TARGET_FILE:gemmlab> bench-reference --no-gpu -s 64 --threads -3 -o ${_out}/bench_threads3.csv)
gemmlab_cli_test_nores(order_unknown_kernel_first 2 "unknown kernel 'nope'"
  -- $<TARGET_FILE:gemmlab> order -k nope -s 64)
gemmlab_cli_test_nores(probe_unknown_instruction_first 2 "--instructions: unknown instruction 'bogus'"
  -- $<TARGET_FILE:gemmlab> probe --instructions bogus)
gemmlab_cli_test_nores(predict_unknown_kernel_first 2 "unknown kernel 'nope'"
  -- $<TARGET_FILE:gemmlab> predict -k nope -s 64 -o results/p.csv)
gemmlab_cli_test_nores(bench_reference_unknown_distribution_first 2 "unknown distribution 'nope'"
  -- $<TARGET_FILE:gemmlab> bench-reference -d nope --no-gpu)
# ... and when the options are right, the missing folders of -o are made (here new/deeper/ and the
# default results/ of a run without -o), the plan written into them (in a folder of its own: the tests
# above run beside it and check that no results/ appears in theirs).
file(MAKE_DIRECTORY ${_out}/output_folder_made)
add_test(NAME cli.output_folder_made COMMAND bash -c
  "rm -rf new results && $<TARGET_FILE:gemmlab> run --suite smoke --dry-run -o new/deeper/plan.csv && test -s new/deeper/plan.csv && $<TARGET_FILE:gemmlab> run --threads 2 -k sgemm_01_naive -s 64 --dry-run && ls results/*.csv && rm -rf new results"
  WORKING_DIRECTORY ${_out}/output_folder_made)
set_tests_properties(cli.output_folder_made PROPERTIES LABELS cli)

# A real single-node Slurm (munge, slurmctld, slurmd on localhost) runs a job array of --dry-run
# shards and the merge job, with this gemmlab; skipped (77) where the daemons cannot start.
add_test(NAME slurm.local_job_array COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/slurm/run_local_slurm.sh $<TARGET_FILE:gemmlab> 4)
set_tests_properties(slurm.local_job_array PROPERTIES LABELS slurm SKIP_RETURN_CODE 77 TIMEOUT 180)

add_test(NAME cli.list COMMAND $<TARGET_FILE:gemmlab> list)
set_tests_properties(cli.list PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "sgemm_01_naive.*cublas_gemmex_fp16_f32")
# `all` leaves the host kernels out and `gemmlab list` says so, with the reason.
if("cpu" IN_LIST GEMMLAB_FAMILIES)
  add_test(NAME cli.list_left_out_of_all COMMAND $<TARGET_FILE:gemmlab> list)
  set_tests_properties(cli.list_left_out_of_all PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION
    "left out of `all` \\(run them by name, family:<family> or a suite that names them\\):\n  eigen_gemm_fp32 +runs on the host CPU \\(Eigen\\)")
endif()
# A plan's exclude (suite key and --exclude): an unknown name or family is refused as in -k, nothing written.
gemmlab_cli_test(exclude_unknown_kernel 2 "unknown kernel 'no_such_kernel' in exclude" ${_out}/excl1.csv*
  -- $<TARGET_FILE:gemmlab> run --dry-run -k all --exclude no_such_kernel -s 64 -o ${_out}/excl1.csv)
gemmlab_cli_test(exclude_unknown_family 2 "no kernel of family 'nope' is registered in exclude" ${_out}/excl2.csv*
  -- $<TARGET_FILE:gemmlab> run --dry-run --exclude family:nope -s 64 -o ${_out}/excl2.csv)
gemmlab_cli_test(exclude_everything 2 "kernels \\[sgemm_01_naive\\] select no kernel" ${_out}/excl3.csv*
  -- $<TARGET_FILE:gemmlab> run --dry-run -k sgemm_01_naive --exclude family:simt -s 64 -o ${_out}/excl3.csv)
file(WRITE ${_out}/exclude_suite.toml "kernels = [\"family:simt\"]\nexclude = [\"sgemm_01_naiv\"]\nsizes = [64]\n")
gemmlab_cli_test(exclude_in_suite 2 "unknown kernel 'sgemm_01_naiv' in exclude \\(did you mean: sgemm_01_naive" ${_out}/excl4.csv*
  -- $<TARGET_FILE:gemmlab> run --dry-run --suite ${_out}/exclude_suite.toml -o ${_out}/excl4.csv)

# Plots read only CSV: render each figure script from a small CSV checked into tests/data.
set(GEMMLAB_PYTHON "" CACHE STRING "Python with matplotlib for the plot tests (default: .venv/bin/python, else python3)")
if(NOT GEMMLAB_PYTHON)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python)
    set(GEMMLAB_PYTHON ${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python)
  else()
    set(GEMMLAB_PYTHON python3)
  endif()
endif()
# Without cuBLAS (hidden from every place gemmlab looks) and, on a machine without one, the driver: the
# commands that launch nothing run, `gemmlab run` names what is missing (tests/cli_no_cuda.sh).
add_test(NAME cli.no_cuda_libraries COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli_no_cuda.sh $<TARGET_FILE:gemmlab>
         ${GEMMLAB_PYTHON} ${_out}/no_cuda_libraries)
set_tests_properties(cli.no_cuda_libraries PROPERTIES LABELS cli SKIP_RETURN_CODE 77)
# `gemmlab plot` from a build of the sources, through GEMMLAB_PYTHON's gemmlab package (tests/cli_plot.sh).
add_test(NAME cli.plot COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli_plot.sh $<TARGET_FILE:gemmlab> ${GEMMLAB_PYTHON}
         ${_out}/plot)
set_tests_properties(cli.plot PROPERTIES LABELS cli)
# `gemmlab inputs` / `gemmlab evaluate` on bad input (tests/evaluate_fixture.py makes the folders
# and C files): message, exit 2, and no result file.
set(_ev ${_out}/evaluate)
add_test(NAME cli.evaluate_fixture COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/evaluate_fixture.py
         $<TARGET_FILE:gemmlab> ${_ev})
set_tests_properties(cli.evaluate_fixture PROPERTIES LABELS cli FIXTURES_SETUP evaluate_inputs)
function(gemmlab_evaluate_test name rc pattern)
  gemmlab_cli_test(${name} ${rc} ${pattern} ${_ev}/${name}.csv -- $<TARGET_FILE:gemmlab> ${ARGN} -o ${_ev}/${name}.csv)
  set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED evaluate_inputs)
endfunction()
gemmlab_evaluate_test(evaluate_shape 2 "c_shape.npy is 8x5 but A B is 8x6"
  evaluate ${_ev}/in --output ${_ev}/c_shape.npy --name k)
gemmlab_evaluate_test(evaluate_dtype 2 "C is float64 but the output format is fp32: save C as float32"
  evaluate ${_ev}/in --output ${_ev}/c_f64.npy --name k)
gemmlab_evaluate_test(evaluate_dtype_fp16 2 "C is float32 but the output format is fp16"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --output-format fp16)
gemmlab_evaluate_test(evaluate_int_dtype 2 "element type '<i4' is not float16, float32 or float64"
  evaluate ${_ev}/in --output ${_ev}/c_int.npy --name k)
gemmlab_evaluate_test(evaluate_not_representable 2 "is not a value of bf16 .*exactly representable"
  evaluate ${_ev}/in --output ${_ev}/c_not_bf16.npy --name k --output-format bf16)
gemmlab_evaluate_test(evaluate_nonfinite 2 "C has 2 NaN or infinite entries \\(first at \\[1, 2\\]\\).*--allow-nonfinite"
  evaluate ${_ev}/in --output ${_ev}/c_nan.npy --name k)
gemmlab_evaluate_test(evaluate_not_inputs 2 "is not a gemmlab inputs folder \\(it has no inputs.json\\)"
  evaluate ${_ev}/not_inputs --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_foreign_json 2 "is not a gemmlab inputs.json"
  evaluate ${_ev}/foreign_json --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_missing_folder 2 "is not a folder"
  evaluate ${_ev}/no_such_folder --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_other_version 2 "written by gemmlab 0.0 .*make the folder again"
  evaluate ${_ev}/other_version --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_other_format 2 "inputs format version 99"
  evaluate ${_ev}/other_format --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_tampered 2 "A.npy is not the file `gemmlab inputs` wrote"
  evaluate ${_ev}/tampered --output ${_ev}/c_ok.npy --name k)
gemmlab_evaluate_test(evaluate_bad_accumulation 2 "--accumulation 'magic' is not known"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --accumulation magic)
# An existing result is replaced only with --force (it was overwritten silently): written once (--force, so that a
# second ctest run in this build folder passes too), then refused.
gemmlab_cli_test(evaluate_written 0 "bias" - -- $<TARGET_FILE:gemmlab> evaluate ${_ev}/in --output ${_ev}/c_ok.npy
  --name k --force -o ${_ev}/written.csv)
set_tests_properties(cli.evaluate_written PROPERTIES FIXTURES_REQUIRED evaluate_inputs FIXTURES_SETUP evaluate_written)
gemmlab_cli_test(evaluate_exists 2 "written.csv' already exists: choose another --out to keep it, or pass --force" -
  -- $<TARGET_FILE:gemmlab> evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k -o ${_ev}/written.csv)
set_tests_properties(cli.evaluate_exists PROPERTIES FIXTURES_REQUIRED evaluate_written)
gemmlab_evaluate_test(evaluate_negative_time 2 "--time-ms must be a positive number of milliseconds"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --time-ms -1)
gemmlab_evaluate_test(evaluate_reps_without_time 2 "--reps counts the repetitions behind --time-ms: give --time-ms too"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --reps 5)
gemmlab_evaluate_test(evaluate_promoted_needs_interval 2 "promoted needs --promotion-interval-k"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --accumulation promoted)
# accumulation tree is an explained record's (it holds the tree): never declared by name.
gemmlab_evaluate_test(evaluate_tree_is_not_declared 2 "accumulation tree is the order of a revealed summation tree"
  evaluate ${_ev}/in --output ${_ev}/c_ok.npy --name k --accumulation tree)
gemmlab_cli_test(inputs_not_empty 2 "exists and is not empty: .*--force" ${_ev}/in/A.npy.partial
  -- $<TARGET_FILE:gemmlab> inputs -d uniform_0_1 -s 8 --format fp16 -o ${_ev}/in)
set_tests_properties(cli.inputs_not_empty PROPERTIES FIXTURES_REQUIRED evaluate_inputs)
gemmlab_cli_test(inputs_bad_distribution 2 "distribution" ${_ev}/new_in
  -- $<TARGET_FILE:gemmlab> inputs -d gaussian_7 -s 8 -o ${_ev}/new_in)
gemmlab_cli_test(inputs_scaled_distribution 2 "is a scaled fp8 distribution" ${_ev}/new_in3
  -- $<TARGET_FILE:gemmlab> inputs -d normal_0_1@e4m3_tensor -s 8 --format e4m3 -o ${_ev}/new_in3)
gemmlab_cli_test(inputs_not_expressible 2 "bf16" ${_ev}/new_in2/A.npy
  -- $<TARGET_FILE:gemmlab> inputs -d cancel_-10 -s 8 --format bf16 -o ${_ev}/new_in2)
# The round trips that must succeed: numpy float64 within gamma_K(2^-53), another git commit is a
# warning, NaN counted with --allow-nonfinite (status failed_bound, exit 0, as gemmlab run).
add_test(NAME cli.evaluate_round_trip
  COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/examples/numpy_round_trip.py
          --gemmlab $<TARGET_FILE:gemmlab> --work ${_ev}/round_trip --check-cli ${_ev})
set_tests_properties(cli.evaluate_round_trip PROPERTIES LABELS cli FIXTURES_REQUIRED evaluate_inputs)

add_test(NAME plots.bias_spread
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/bias_spread.py ${_data}/sample_run.csv ${_out}/bias_spread.png)
set_tests_properties(plots.bias_spread PROPERTIES LABELS plots)
add_test(NAME plots.series
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/series.py ${_data}/sample_run.csv ${_out}/series.png --family simt)
set_tests_properties(plots.series PROPERTIES LABELS plots)
add_test(NAME plots.accumulation_vs_k
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/accumulation_vs_k.py ${_data}/sample_accumulation_vs_k.csv ${_out}/acc.png)
add_test(NAME plots.fp8_promotion
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/fp8_promotion.py ${_data}/sample_fp8_promotion.csv ${_out}/fp8.png)
add_test(NAME plots.pareto
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/pareto.py ${_data}/sample_suite.csv ${_out}/pareto.png)
add_test(NAME plots.heatmap
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/heatmap.py ${_data}/sample_suite.csv ${_out}/heatmap.png)
# Several CSVs in one figure: the H100 built-in kernels and PyTorch's matmul from `gemmlab evaluate`.
set(_torch ${CMAKE_CURRENT_SOURCE_DIR}/results/torch)
add_test(NAME plots.pareto_with_evaluate
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/pareto.py ${_torch}/builtin_uniform_0_1_h100.csv
          ${_torch}/torch_matmul_h100.csv ${_out}/pareto_torch.png)
add_test(NAME plots.heatmap_with_evaluate
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/heatmap.py ${_data}/sample_suite.csv ${_torch}/torch_matmul_h100.csv
          ${_out}/heatmap_torch.png)
set_tests_properties(plots.pareto_with_evaluate plots.heatmap_with_evaluate PROPERTIES LABELS plots)
# bias_spread.py still renders a suite-sized CSV (sample_suite.csv: 15 kernels, failed_bound and no_bound rows).
add_test(NAME plots.bias_spread_suite
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/bias_spread.py ${_data}/sample_suite.csv ${_out}/bias_spread_suite.png)
# fp64_emulation.py on a small synthetic CSV (tests/data/sample_fp64_emulation.csv: every fp64 kernel, four phi,
# k = 1024 and 16384, a 4096^3 speed row each, a not_supported row that must be left out).
add_test(NAME plots.fp64_emulation
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/fp64_emulation.py ${_data}/sample_fp64_emulation.csv ${_out}/fp64_emulation.png)
set_tests_properties(plots.accumulation_vs_k plots.fp8_promotion plots.pareto plots.heatmap plots.bias_spread_suite
                     plots.fp64_emulation PROPERTIES LABELS plots)
add_test(NAME plots.invariance
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/invariance.py ${_data}/sample_invariance.csv ${_out}/invariance.png)
set_tests_properties(plots.invariance PROPERTIES LABELS plots)
# The revealed tree of an explain report (tests/data/sample_explain_tree.meta.json: a 4-way split-K of
# in-mma chains over 256 products, written by reference/tree_form.hpp), read from the JSON.
add_test(NAME plots.explain_tree
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/explain_tree.py ${_data}/sample_explain_tree.meta.json ${_out}/explain_tree.png)
set_tests_properties(plots.explain_tree PROPERTIES LABELS plots)
# gemmlab invariance: mistakes in what was asked are exit 2 with a message, and no CSV.
gemmlab_cli_test(invariance_m_above_M 2 "m = 65 is outside" ${_out}/inv.csv
  -- $<TARGET_FILE:gemmlab> invariance -k sgemm_01_naive -s 64 --m 65 -o ${_out}/inv.csv)
gemmlab_cli_test(invariance_bad_setting 2 "'ws=zero' is not one of" ${_out}/inv2.csv
  -- $<TARGET_FILE:gemmlab> invariance -k cublas_gemmex_bf16_f32 --settings ws=zero -o ${_out}/inv2.csv)
gemmlab_cli_test(invariance_no_gpu 2 "gemmlab invariance needs a CUDA GPU" ${_out}/inv4.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> invariance -k sgemm_01_naive -s 64 -o ${_out}/inv4.csv)
gemmlab_cli_test(invariance_unknown_kernel 2 "unknown kernel 'nope'" ${_out}/inv3.csv
  -- $<TARGET_FILE:gemmlab> invariance -k nope -o ${_out}/inv3.csv)
# Scaled fp8's figure on a small hand-made CSV (two sizes, two sources, two recipes, an unscaled row,
# a not_applicable row that must be left out).
add_test(NAME plots.scaled_fp8
  COMMAND ${CMAKE_COMMAND} -E env MPLBACKEND=Agg
          ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_plot.py
          ${CMAKE_CURRENT_SOURCE_DIR}/plots/scaled_fp8.py ${_data}/sample_scaled_fp8.csv ${_out}/scaled_fp8.png)
set_tests_properties(plots.accumulation_vs_k plots.fp8_promotion plots.pareto plots.heatmap plots.bias_spread_suite
                     plots.scaled_fp8 PROPERTIES LABELS plots)
gemmlab_cli_test(order_unknown_kernel 2 "unknown kernel 'nope'" ${_out}/o.csv
  -- $<TARGET_FILE:gemmlab> order -k nope -s 64 -o ${_out}/o.csv)
gemmlab_cli_test(order_entry_outside 2 "outside the 64x64x64 output" ${_out}/o2.csv
  -- $<TARGET_FILE:gemmlab> order -k sgemm_01_naive -s 64 -i 64 -o ${_out}/o2.csv)
gemmlab_cli_test(probe_not_csv 2 "--out must name a .csv file" -
  -- $<TARGET_FILE:gemmlab> probe -o ${_out}/p.txt)
gemmlab_cli_test(tune_bad_reps 2 "--reps must be at least 1" -
  -- $<TARGET_FILE:gemmlab> tune --reps 0)
gemmlab_cli_test(order_no_gpu 2 "no usable GPU" ${_out}/o3.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> order -k sgemm_01_naive -s 64 -o ${_out}/o3.csv)
gemmlab_cli_test(probe_no_gpu 2 "no usable GPU" ${_out}/p3.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> probe -o ${_out}/p3.csv)
# gemmlab tc-eval: the model on one case or a file of cases (no GPU needed).
add_test(NAME cli.tc_eval_cases COMMAND $<TARGET_FILE:gemmlab> tc-eval --in ${_data}/tc_eval_cases.csv -o ${_out}/tc_cases.csv)
set_tests_properties(cli.tc_eval_cases PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "4 cases, 4 with an observed D, 0 differ from the model")
add_test(NAME cli.tc_eval_one COMMAND $<TARGET_FILE:gemmlab> tc-eval -i wgmma_m64n8k32_e4m3_f32 --c 0x3f800008
  --a "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
  --b "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
set_tests_properties(cli.tc_eval_one PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x3f800000 1[^.0-9]")
# The published hardware outputs of eight GPUs (tests/data/km_vectors/): each GPU's model reproduces
# its sample, and Hopper's model does not reproduce the others' (the samples tell them apart).
add_test(NAME tc.km_vectors COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_km_vectors.sh $<TARGET_FILE:gemmlab>
  ${_data}/km_vectors ${_out}/km_vectors)
set_tests_properties(tc.km_vectors PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "km_vectors: 48 sets checked"
  FAIL_REGULAR_EXPRESSION "FAIL")
# tc-eval's choice of model: --gpu names one (a GPU, an architecture or a generation), none is Hopper's
# and says so, an unknown name is refused naming the known ones, an instruction the GPU lacks names
# the closest it has.
gemmlab_cli_test(tc_eval_default_gpu 0 "no --gpu given: using hopper's model" -
  -- $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --a "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
  --b "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
gemmlab_cli_test(tc_eval_gpu_sm80 0 "on ampere" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu sm_80 -i mma_m16n8k16_f16_f32 --a "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
  --b "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
gemmlab_cli_test(tc_eval_gpu_unknown 2 "--gpu rtx9090: not a GPU gemmlab models.*v100, a100" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu rtx9090 -i mma_m16n8k16_f16_f32 --a "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
  --b "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
gemmlab_cli_test(tc_eval_gpu_lacks 2 "wgmma_m64n8k16_f16_f32 does not exist on ampere: the closest instruction it has is mma_m16n8k16_f16_f32" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu a100 -i wgmma_m64n8k16_f16_f32 --a "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"
  --b "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
# Volta's mma.m8n8k4: one block of 4 at 23 fraction bits. 1 + 3 products of 2^-24 (fp16's least
# subnormal): each 2^-24 is cut below the block's last place 2^-23, D = 1 (0x3f800000); Hopper's
# 25 bits would keep them, 1 + 3*2^-24 truncated to fp32: 0x3f800001. On Hopper it is refused.
add_test(NAME cli.tc_eval_volta_mma COMMAND $<TARGET_FILE:gemmlab> tc-eval --gpu v100 -i mma_m8n8k4_f16_f32
  --a "1 0x0001 0x0001 0x0001" --b "1 1 1 1")
set_tests_properties(cli.tc_eval_volta_mma PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x3f800000 1[^.0-9]")
gemmlab_cli_test(tc_eval_volta_mma_elsewhere 2 "mma_m8n8k4_f16_f32 does not exist on hopper" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu h100 -i mma_m8n8k4_f16_f32 --a "1 1 1 1" --b "1 1 1 1")
gemmlab_cli_test(tc_eval_models_csv 0 "wrote the models of 5 generation" -
  -- $<TARGET_FILE:gemmlab> tc-eval --list --gpu all -o ${_out}/tc_models.csv)
gemmlab_cli_test(tc_eval_wrong_d 5 "1 differ from the model" -
  -- $<TARGET_FILE:gemmlab> tc-eval --in ${_data}/tc_eval_wrong_d.csv -o ${_out}/tc_wrong.csv)
gemmlab_cli_test(tc_eval_malformed 2 "tc_eval_bad.csv line 3: 2 fields, the header has 5" ${_out}/tc_bad.csv
  -- $<TARGET_FILE:gemmlab> tc-eval --in ${_data}/tc_eval_bad.csv -o ${_out}/tc_bad.csv)
gemmlab_cli_test(tc_eval_wrong_k 2 "takes k = 16 values, got 2" -
  -- $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --a "1 1" --b "1 1")
gemmlab_cli_test(tc_eval_not_representable 2 "not exactly representable in fp16" -
  -- $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --a "0.1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" --b "1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
# One separator, spaces: commas are still read, with a deprecation warning (exit 0).
gemmlab_cli_test(tc_eval_commas_deprecated 0 "commas between values are deprecated" -
  -- $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --a 1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0 --b 1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0)
# --explain: the rule and the intermediate values (README's worked example).
add_test(NAME cli.tc_eval_explain COMMAND $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --explain
  --a "1 0x0e00 0 0 0 0 0 0 0 0 0 0 0 0 0 0" --b "1 0x0c00 0 0 0 0 0 0 0 0 0 0 0 0 0 0")
set_tests_properties(cli.tc_eval_explain PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "aligned to 2\\^0 \\(set by a0\\*b0\\).*truncated sum 33554435\\*2\\^-25, normalised: leading bit 2\\^0")
# tf32 operands as raw fp32 bits: the low 13 bits are ignored (tf32_low_bits toward_zero).
add_test(NAME cli.tc_eval_tf32_bits COMMAND $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k8_tf32_f32
  --a "0x3f800fff 0 0 0 0 0 0 0" --b "0x3f800000 0 0 0 0 0 0 0")
set_tests_properties(cli.tc_eval_tf32_bits PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x3f800000 1[^.0-9]")
# match is bit for bit, NaN included: inf * 0 is written 0x7fffffff, so 0x7fc00000 differs (exit 5).
gemmlab_cli_test(tc_eval_nan_bits 5 "observed D 0x7fc00000 differs from the model's 0x7fffffff" -
  -- $<TARGET_FILE:gemmlab> tc-eval -i mma_m16n8k16_f16_f32 --a "inf 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" --b "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0" --d 0x7fc00000)
# Extra columns pass through (tests/cpu/test_tc_eval.cpp checks the output's columns).
add_test(NAME cli.tc_eval_extra_columns COMMAND $<TARGET_FILE:gemmlab> tc-eval --in ${_data}/tc_eval_extra_columns.csv
  -o ${_out}/tc_extra.csv --explain)
set_tests_properties(cli.tc_eval_extra_columns PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "2 cases, 2 with an observed D, 0 differ from the model")
# The adversarial corpus as tc-eval cases (11 rule classes x 1,000 for fp16).
add_test(NAME cli.tc_eval_write_corpus COMMAND $<TARGET_FILE:gemmlab> tc-eval --write-cases corpus
  -i mma_m16n8k16_f16_f32 -o ${_out}/tc_corpus_cases.csv)
set_tests_properties(cli.tc_eval_write_corpus PROPERTIES LABELS cli
  PASS_REGULAR_EXPRESSION "wrote 11000 corpus cases of mma_m16n8k16_f16_f32")
# Blackwell's block-scaled kinds (a model from the literature, reference/tc_block_scaled.hpp), on hand-derived
# cases (tests/cpu/test_tc_eval_block_scaled.cpp derives each): eight products 1.5 * 2^-6 under scale_a 0x6c
# (2^-19) beside C = 1 keep 2^-25 each of their 3*2^-26 at F = 25 (D = 1 + 2^-22, where the exact sum is
# 1 + 3*2^-23); under 2^-17 every bit is kept (D = 1 + 12*2^-23, the exact sum); C = 1024 above 32 products
# 1.75 (e2m3) * 1.5 (e3m2) * 2^-17 cuts each to 0; kind::mxf4nvf4 groups 1.5 and 16 under ue4m3 scales
# 1.25 * 0.75 and 448 * 2^-6 give 113.40625.
string(REPEAT " 0" 24 _z24)
string(REPEAT " 0" 47 _z47)
set(_bs_a "1.5 1.5 1.5 1.5 1.5 1.5 1.5 1.5${_z24}")
set(_bs_b "0.015625 0.015625 0.015625 0.015625 0.015625 0.015625 0.015625 0.015625${_z24}")
add_test(NAME cli.tc_eval_block_scaled_cut COMMAND $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf8f6f4
  --a ${_bs_a} --b ${_bs_b} --scale-a 0x6c --scale-b 1 --c 1)
set_tests_properties(cli.tc_eval_block_scaled_cut PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x3f800002 1.0000002384185791")
add_test(NAME cli.tc_eval_block_scaled_exact COMMAND $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf8f6f4
  --a ${_bs_a} --b ${_bs_b} --scale-a 0x1p-17 --scale-b 1 --c 1)
set_tests_properties(cli.tc_eval_block_scaled_exact PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x3f80000c 1.0000014305114746")
string(REPEAT "1.75 " 32 _bs_175)
string(REPEAT "1.5 " 32 _bs_15)
add_test(NAME cli.tc_eval_block_scaled_c_large COMMAND $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf8f6f4
  --a-format e2m3 --b-format e3m2 --a ${_bs_175} --b ${_bs_15} --scale-a 0x1p-16 --scale-b 0.5 --c 1024)
set_tests_properties(cli.tc_eval_block_scaled_c_large PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x44800000 1024[^.0-9]")
string(REPEAT " 0" 14 _z14)
add_test(NAME cli.tc_eval_block_scaled_nvf4 COMMAND $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf4nvf4
  --a "1.5 6${_z14} 4${_z47}" --b "3 -0.5${_z14} 4${_z47}" --scale-a "0x3a 448 1 1" --scale-b "0.75 0x08 1 1"
  --block 16 --scale-format ue4m3)
set_tests_properties(cli.tc_eval_block_scaled_nvf4 PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "0x42e2d000 113.40625[^0-9]")
gemmlab_cli_test(tc_eval_block_scaled_literature 0 "tcgen05_mxf8f6f4 on blackwell: a model from the literature .*that no gemmlab probe has run" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf8f6f4 --a ${_bs_a} --b ${_bs_b} --scale-a 0x6c --scale-b 1 --c 1)
gemmlab_cli_test(tc_eval_block_scaled_h100 2 "tcgen05_mxf8f6f4 does not exist on hopper: .*b200 \\(blackwell, sm_100\\)" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu h100 -i tcgen05_mxf8f6f4 --a ${_bs_a} --b ${_bs_b} --scale-a 0x6c --scale-b 1)
gemmlab_cli_test(tc_eval_block_scaled_not_power_of_two 2 "scale_a\\[0\\]: 3 is not a value of ue8m0: ue8m0 scales are powers of two" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf8f6f4 --a ${_bs_a} --b ${_bs_b} --scale-a 3 --scale-b 1)
gemmlab_cli_test(tc_eval_block_scaled_scale_count 2 "scale_a: tcgen05_mxf4nvf4 takes 4 ue4m3 scales per operand \\(one per 16 of k = 64\\), got 2" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu b200 -i tcgen05_mxf4nvf4 --a "1.5 6${_z14} 4${_z47}" --b "3 -0.5${_z14} 4${_z47}"
  --scale-a "1 1" --scale-b "1 1 1 1")
gemmlab_cli_test(tc_eval_block_scaled_file 0 "5 cases, 5 with an observed D, 0 differ from the model" -
  -- $<TARGET_FILE:gemmlab> tc-eval --gpu b200 --in ${_data}/tc_eval_block_scaled.csv -o ${_out}/tc_block_scaled.csv --explain)
gemmlab_cli_test(predict_unmeasured_conversion 2 "converted from fp32 to tf32" ${_out}/pr.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublas_gemmex_fp32_fast_tf32 -s 256 -o ${_out}/pr.csv)
# Scaled fp8 (issue 22): a bad recipe, a recipe the kernel cannot take, data the recipe refuses
# (every source value is 0 in fp32: all-zero blocks), a K the block-scaled kernel cannot tile.
gemmlab_cli_test(scaled_bad_recipe 2 "bad scaled-fp8 recipe 'e4m3_blk'.*valid recipes" ${_out}/sf1.csv
  -- $<TARGET_FILE:gemmlab> run -k cublaslt_fp8_scaled_e4m3_tensor_f32 -d normal_0_1@e4m3_blk -s 64 -o ${_out}/sf1.csv)
gemmlab_cli_test(predict_scaled_recipe_mismatch 2 "takes e4m3 with tensor x tensor scales. normal_0_1@e4m3_rowwise does not give them" ${_out}/sf2.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublaslt_fp8_scaled_e4m3_tensor_f32 -d normal_0_1@e4m3_rowwise -s 256 -o ${_out}/sf2.csv)
gemmlab_cli_test(predict_unscaled_on_recipe 2 "takes no scales" ${_out}/sf3.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublaslt_fp8_e4m3_f32 -d normal_0_1@e4m3_tensor -s 256 -o ${_out}/sf3.csv)
gemmlab_cli_test(predict_scaled_all_zero_block 2 "is all zero \\(amax 0\\)" ${_out}/sf4.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublaslt_fp8_scaled_e4m3_tensor_f32 -d logunif_-200_-160@e4m3_tensor -s 256 -o ${_out}/sf4.csv)
if("hopper" IN_LIST GEMMLAB_FAMILIES)
  gemmlab_cli_test(scaled_k_not_tiled 2 "K a multiple of 16. got M=256 N=256 K=200" ${_out}/sf5.csv
    -- $<TARGET_FILE:gemmlab> run -k hgemm_wgmma_11_fp8scaled_sm8_e4m3_1x128_128x128 -d normal_0_1@e4m3_1x128_128x128
       -s 256x256x200 -o ${_out}/sf5.csv)
endif()
gemmlab_cli_test(predict_bad_tree_entry 2 "'5' is not I:J" ${_out}/pr2.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublas_gemmex_fp16_f32 -s 256 --tree-entries 0:0,5 -o ${_out}/pr2.csv)
gemmlab_cli_test(predict_tree_entry_outside 2 "--tree-entries: \\(300, 0\\) lies outside the \\(256, 256\\) output" ${_out}/pr3.csv
  -- $<TARGET_FILE:gemmlab> predict -k cublas_gemmex_fp16_f32 -s 256 --tree-entries 300:0 -o ${_out}/pr3.csv)

# `gemmlab explain` on bad input: an unknown kernel, a size the kernel cannot take, an unusable
# distribution, no GPU; nothing written. And python/gemmlab/builtin_numerics.json (gemmlab.explain's
# "behaves exactly like") must say what this build's registry says of every kernel it has.
gemmlab_cli_test(explain_unknown_kernel 2 "unknown kernel 'no_such_kernel'" ${_out}/x1.csv
  -- $<TARGET_FILE:gemmlab> explain -k no_such_kernel -s 64 -o ${_out}/x1.csv)
gemmlab_cli_test(explain_bad_distribution 2 "distribution" ${_out}/x2.csv
  -- $<TARGET_FILE:gemmlab> explain -k sgemm_01_naive -s 64 -d gaussian_7 -o ${_out}/x2.csv)
gemmlab_cli_test(explain_no_gpu 2 "no usable GPU" ${_out}/x3.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> explain -k sgemm_01_naive -s 64 -o ${_out}/x3.csv)
gemmlab_cli_test(explain_not_csv 2 "--out must name a .csv file" ${_out}/x4.txt
  -- $<TARGET_FILE:gemmlab> explain -k sgemm_01_naive -s 64 -o ${_out}/x4.txt)
# A built-in quantized kernel with both operands quantized: refused, naming the way to judge it.
gemmlab_cli_test(explain_quantized_both 2 "both operands of int8_rowwise are quantized" ${_out}/x5.csv
  -- $<TARGET_FILE:gemmlab> explain -k cublaslt_int8_rowwise -s 256 -o ${_out}/x5.csv)
# `gemmlab explain --diff A B` on bad input: one name, an unknown kernel, the same kernel twice, kernels
# of different input formats, --judge with it, neither -k nor --diff, no GPU; nothing written.
gemmlab_cli_test(explain_diff_one_name 2 "At least 2 required" ${_out}/xd1.csv
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive -s 64 -o ${_out}/xd1.csv)
gemmlab_cli_test(explain_diff_unknown_kernel 2 "unknown kernel 'no_such_kernel'" ${_out}/xd2.csv
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive no_such_kernel -s 64 -o ${_out}/xd2.csv)
gemmlab_cli_test(explain_diff_same_kernel 2 "the same kernel twice" ${_out}/xd3.csv
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive sgemm_01_naive -s 64 -o ${_out}/xd3.csv)
gemmlab_cli_test(explain_diff_input_formats 2 "different input formats" ${_out}/xd4.csv
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive cublas_gemmex_fp16_f32 -s 64 -o ${_out}/xd4.csv)
gemmlab_cli_test(explain_diff_judge 2 "--judge applies to one kernel" ${_out}/xd5.csv
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive sgemm_02_coalesce -s 64 --judge ${_out}/xd6.csv
     -o ${_out}/xd5.csv)
gemmlab_cli_test(explain_neither 2 "give -k KERNEL, or --diff A B" -
  -- $<TARGET_FILE:gemmlab> explain -s 64)
gemmlab_cli_test(explain_diff_no_gpu 2 "no usable GPU" ${_out}/xd7.csv --skip-if-gpu
  -- $<TARGET_FILE:gemmlab> explain --diff sgemm_01_naive sgemm_02_coalesce -s 64 -o ${_out}/xd7.csv)
add_test(NAME cli.builtin_numerics_in_sync
         COMMAND ${GEMMLAB_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_builtin_numerics.py $<TARGET_FILE:gemmlab>
                 ${CMAKE_CURRENT_SOURCE_DIR}/python/gemmlab/builtin_numerics.json ${_out}/builtin_numerics.json)
set_tests_properties(cli.builtin_numerics_in_sync PROPERTIES LABELS cli)
