from openclaw_cli.cli.entry import main

main()
