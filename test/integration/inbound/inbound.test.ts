/** The inbound message cases (customers, hardening, the message plan's targets), one test file: test/helpers/cases.ts. */
import { runCases } from '../../helpers/cases';

runCases(__dirname);
