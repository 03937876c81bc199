from openclaw_cli.cli.main import main

main()
