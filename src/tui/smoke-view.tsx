/** The Smoke view: the fields, then each step live (spinner, then result, HTTP status, ms) and a summary. Render only. */
import { Spinner } from '@inkjs/ui'
import { Box, Text } from 'ink'
import { FieldLine } from './parts.js'
import { isBusy, type SmokeStepRow, type State } from './state.js'

const MARK: Record<SmokeStepRow['status'], string> = { pending: '·', running: '', pass: '✓', fail: '✗', skipped: '-' }
const WORD: Record<SmokeStepRow['status'], string> = { pending: 'not run', running: 'running', pass: 'ok', fail: 'FAIL', skipped: 'skipped' }

function StepLine(props: { step: SmokeStepRow; index: number }) {
  const { step } = props
  const name = `${props.index + 1}. ${step.name}`
  return (
    <Box>
      <Box width={3} flexShrink={0}>
        {step.status === 'running' ? <Spinner /> : <Text>{MARK[step.status]}</Text>}
      </Box>
      <Box width={24} flexShrink={0}>
        <Text>{name}</Text>
      </Box>
      <Box width={9} flexShrink={0}>
        <Text bold={step.status === 'fail'}>{WORD[step.status]}</Text>
      </Box>
      <Box width={6} flexShrink={0} justifyContent="flex-end" paddingRight={1}>
        <Text>{step.httpStatus === undefined ? '' : String(step.httpStatus)}</Text>
      </Box>
      <Box width={10} flexShrink={0} justifyContent="flex-end" paddingRight={1}>
        <Text>{step.ms === undefined ? '' : `${Math.round(step.ms)} ms`}</Text>
      </Box>
    </Box>
  )
}

export function SmokeView(props: { state: State }) {
  const { smoke } = props.state
  const running = isBusy(props.state, 'smoke')
  const passed = smoke.steps.filter((s) => s.status === 'pass').length
  const total = smoke.steps.reduce((sum, s) => sum + (s.ms ?? 0), 0)
  const failed = smoke.steps.findIndex((s) => s.status === 'fail')
  return (
    <Box flexDirection="column">
      {smoke.fields.map((f, i) => (
        <FieldLine key={f.label} field={f} selected={smoke.focus === i} typing={smoke.editing} />
      ))}
      <Text> </Text>
      <Box>
        <Box width={27} flexShrink={0}>
          <Text bold>{'   STEP'}</Text>
        </Box>
        <Box width={9} flexShrink={0}>
          <Text bold>RESULT</Text>
        </Box>
        <Box width={6} flexShrink={0} justifyContent="flex-end" paddingRight={1}>
          <Text bold>HTTP</Text>
        </Box>
        <Box width={10} flexShrink={0} justifyContent="flex-end" paddingRight={1}>
          <Text bold>TIME</Text>
        </Box>
      </Box>
      {smoke.steps.map((step, i) => (
        <StepLine key={i} step={step} index={i} />
      ))}
      <Text> </Text>
      {running ? (
        <Text>Running…</Text>
      ) : smoke.result !== null ? (
        <Text bold>
          {smoke.result === 'pass' ? 'PASS' : 'FAIL'}: {passed} of {smoke.steps.length} steps passed in {Math.round(total)} ms
        </Text>
      ) : (
        <Text>{smoke.editing ? 'Enter on the password runs the steps.' : 'Enter (or e) edits the selected field, ↑↓ select another, r runs.'}</Text>
      )}
      {failed >= 0 && smoke.steps[failed].detail !== undefined ? (
        <Text wrap="wrap">
          Step {failed + 1} ({smoke.steps[failed].name}) failed: {smoke.steps[failed].detail}
        </Text>
      ) : null}
      {smoke.error !== null ? <Text wrap="wrap">Error: {smoke.error}</Text> : null}
    </Box>
  )
}
