/** A form over the Users view: add a user, or set a password. Render only. */
import { Spinner } from '@inkjs/ui'
import { Box, Text } from 'ink'
import { FieldLine } from './parts.js'
import type { Form } from './state.js'

export function FormView(props: { form: Form; busy: string | null }) {
  const { form } = props
  return (
    <Box flexDirection="column">
      <Text bold>{form.title}</Text>
      <Text> </Text>
      {form.fields.map((f, i) => (
        <FieldLine key={f.label} field={f} selected={form.focus === i} typing />
      ))}
      <Text> </Text>
      {props.busy !== null ? <Spinner label={props.busy} /> : null}
      {form.error !== null ? <Text wrap="wrap">Error: {form.error}</Text> : null}
      {props.busy === null && form.error === null ? <Text>Passwords are not shown; type each one twice.</Text> : null}
    </Box>
  )
}
