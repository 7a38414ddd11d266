/**
 * Import FIRST in a test file that waits for a real form timeout (for a `*.cases.ts` module,
 * in its group's test file too: test/helpers/cases.ts): lets its forms time out
 * after a few seconds instead of the 10 s minimum. The workflow schemas read
 * FORM_TIMEOUT_MIN_SECONDS when they load (src/config.ts, formTimeoutMinSeconds), so it
 * must be set before anything imports src/. Jest gives every test file its own copy of
 * process.env, so other files keep the real minimum. Should the order break, creating the
 * workflow answers 400 and the test fails, never passes silently.
 */
process.env.FORM_TIMEOUT_MIN_SECONDS = '1';
