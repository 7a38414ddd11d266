#!/bin/sh
# `npm test [-- jest arguments]`: jest, with the type-check and the import rules running
# beside it rather than before it (on a fresh clone they took 10–16 s of wall time ahead of
# jest; beside it they use the cores jest's global setup leaves idle). The run fails when
# any of the three fails; each prints its own errors.
npm run --silent typecheck &
typecheck=$!
depcruise src temporal --config .dependency-cruiser.cjs --output-type err &
rules=$!
jest "$@"
tests=$?
wait $typecheck
types=$?
wait $rules
imports=$?
[ $types -eq 0 ] || echo "npm test: the type-check failed (npm run typecheck)" >&2
[ $imports -eq 0 ] || echo "npm test: the import rules failed (npm run lint:deps)" >&2
[ $tests -eq 0 ] && [ $types -eq 0 ] && [ $imports -eq 0 ]
