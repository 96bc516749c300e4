/**
 * The KYC services, one use case a file (issue 42): the customer's profile, steps and documents, staff
 * review and decisions, risk, settings, the expiry job and the gates the cashier asks for; what they
 * share (profiles created on first use, the status recomputed from the steps, views) is in shared.ts.
 */
export { attachDocument } from './attach-document'
export { customerDocuments, customerProfile, customerStep } from './customer-read'
export { decideDocument } from './decide-document'
export { decideStep } from './decide-step'
export { documentFile } from './document-file'
export { expireDocuments } from './expire-documents'
export { gatesFor } from './gates'
export { listProfiles } from './list-profiles'
export { readSettings } from './read-settings'
export { recomputeProfiles } from './recompute-profiles'
export { saveSettings } from './save-settings'
export { setRisk } from './set-risk'
export { gatesOf } from './shared'
export { staffProfile } from './staff-profile'
export { submitStep } from './submit-step'
