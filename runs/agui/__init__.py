"""The plain AG-UI endpoint (`POST /v1/agui`, spec section 13): the same run lock, loop and storage as
/v1, its input read as AG-UI's RunAgentInput (protocol.py), its events adapted to plain AG-UI."""
