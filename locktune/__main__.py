from locktune.cli import main

main()
