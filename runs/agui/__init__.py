"""The plain AG-UI endpoint (`POST /v1/agui`, docs/protocol.md#the-ag-ui-endpoint): the same run lock, loop and storage as
/v1, its input read as AG-UI's RunAgentInput (protocol.py), its events adapted to plain AG-UI."""
